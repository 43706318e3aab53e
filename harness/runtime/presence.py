"""Which fleet processes are alive: each worker and scheduler beats into Redis.

A process calls `beat` every `PRESENCE_INTERVAL_S` (the `Heartbeat` thread does it); a member
whose last beat is older than `PRESENCE_TTL_S` counts as gone. `/readyz`, `harness doctor` and
`harness functions` read `live_members`.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass

from harness.runtime.bus_errors import on_bus, redis_errors
from harness.runtime.instance import Runtime

log = logging.getLogger(__name__)

PRESENCE_INTERVAL_S = 2.0
PRESENCE_TTL_S = 10.0


@dataclass(frozen=True)
class Member:
    """One live fleet process: its id, role (`worker` or `scheduler`), the queues it consumes
    and when it last beat (ms since the epoch)."""

    id: str
    role: str
    queues: tuple[str, ...]
    last_beat_ms: int


@on_bus("record this process as alive")
def beat(runtime: Runtime, role: str, queues: tuple[str, ...] = ()) -> None:
    """Record that this process (`runtime.worker_id`) is alive now. Raises
    `BusUnavailableError` on Redis errors."""
    now = runtime.now_ms()
    info = json.dumps({"role": role, "queues": list(queues)})
    pipe = runtime.redis.pipeline(transaction=False)
    pipe.zadd(runtime.keys.presence, {runtime.worker_id: now})
    pipe.hset(runtime.keys.presence_info, runtime.worker_id, info)
    pipe.zremrangebyscore(runtime.keys.presence, "-inf", now - 6 * _ttl_ms())
    pipe.execute()


def leave(runtime: Runtime) -> None:
    """Remove this process from the presence set (on a clean shutdown). Never raises."""
    try:
        pipe = runtime.redis.pipeline(transaction=False)
        pipe.zrem(runtime.keys.presence, runtime.worker_id)
        pipe.hdel(runtime.keys.presence_info, runtime.worker_id)
        pipe.execute()
    except Exception as exc:  # best effort: the entry expires by itself
        log.debug("could not leave the presence set: %s", exc)


@on_bus("read which fleet processes are alive")
def live_members(runtime: Runtime, role: str | None = None) -> list[Member]:
    """Processes that beat within `PRESENCE_TTL_S`, optionally only those of `role`, sorted by
    id. Raises on Redis errors."""
    now = runtime.now_ms()
    entries: list[tuple[str, float]] = runtime.redis.zrangebyscore(  # type: ignore[assignment]
        runtime.keys.presence, now - _ttl_ms(), "+inf", withscores=True
    )
    if not entries:
        return []
    infos = runtime.redis.hmget(runtime.keys.presence_info, [m for m, _ in entries])
    return _members(entries, infos, role)  # type: ignore[arg-type]


async def live_members_async(runtime: Runtime, role: str | None = None) -> list[Member]:
    """`live_members` on the runtime's async client (blocking on the sync one when there is
    none). Raises `BusUnavailableError` on Redis errors."""
    if runtime.aredis is None:
        return live_members(runtime, role)
    now = runtime.now_ms()
    with redis_errors("read which fleet processes are alive"):
        entries: list[tuple[str, float]] = await runtime.aredis.zrangebyscore(  # type: ignore[assignment]
            runtime.keys.presence, now - _ttl_ms(), "+inf", withscores=True
        )
        if not entries:
            return []
        infos = await runtime.aredis.hmget(runtime.keys.presence_info, [m for m, _ in entries])
    return _members(entries, infos, role)  # type: ignore[arg-type]


def _members(
    entries: list[tuple[str, float]], infos: list[str | None], role: str | None
) -> list[Member]:
    members = []
    for (member_id, score), raw in zip(entries, infos, strict=True):
        info = json.loads(raw) if raw else {}
        member = Member(
            id=str(member_id),
            role=str(info.get("role", "")),
            queues=tuple(info.get("queues", ())),
            last_beat_ms=int(score),
        )
        if role is None or member.role == role:
            members.append(member)
    return sorted(members, key=lambda m: m.id)


class Heartbeat:
    """A daemon thread that calls `beat` every `interval` seconds until `stop()`. A failed beat
    is logged and retried at the next interval; it never stops the thread."""

    def __init__(
        self,
        runtime: Runtime,
        role: str,
        queues: tuple[str, ...] = (),
        interval: float = PRESENCE_INTERVAL_S,
    ) -> None:
        self._runtime, self._role, self._queues, self._interval = runtime, role, queues, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="presence", daemon=True)

    def start(self) -> None:
        """Beat once now (so the process counts as live at once), then keep beating."""
        self._beat()
        self._thread.start()

    def stop(self) -> None:
        """Stop beating and leave the presence set."""
        self._stop.set()
        leave(self._runtime)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._beat()

    def _beat(self) -> None:
        try:
            beat(self._runtime, self._role, self._queues)
        except Exception as exc:  # Redis down: the next beat retries
            log.warning("presence beat failed: %s", type(exc).__name__)


def _ttl_ms() -> int:
    return int(PRESENCE_TTL_S * 1000)
