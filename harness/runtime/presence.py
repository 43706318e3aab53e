"""Which fleet processes are alive: each worker and scheduler beats into Redis.

A process calls `beat` every `PRESENCE_INTERVAL_S` (the `Heartbeat` thread does it); a member
whose last beat is older than `PRESENCE_TTL_S` counts as gone. `/readyz`, `harness doctor` and
`harness functions` read `live_members`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from harness.runtime.bus_errors import on_bus, redis_errors
from harness.runtime.functions import WORKER_QUEUES
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


def member_id(runtime: Runtime, role: str, *, beside: bool = False) -> str:
    """The id under which this process is present in `role`: `runtime.worker_id`, or with
    `beside` (a role the process plays beside its main one, e.g. the scheduler a worker runs
    on a thread) `<worker_id>/<role>`, so each role counts once."""
    return f"{runtime.worker_id}/{role}" if beside else runtime.worker_id


@on_bus("record this process as alive")
def beat(
    runtime: Runtime, role: str, queues: tuple[str, ...] = (), member: str | None = None
) -> None:
    """Record that this process is alive now in `role`, as `member` (default
    `runtime.worker_id`). Raises `BusUnavailableError` on Redis errors."""
    now = runtime.now_ms()
    member = member or runtime.worker_id
    info = json.dumps({"role": role, "queues": list(queues)})
    pipe = runtime.redis.pipeline(transaction=False)
    pipe.zadd(runtime.keys.presence, {member: now})
    pipe.hset(runtime.keys.presence_info, member, info)
    pipe.zremrangebyscore(runtime.keys.presence, "-inf", now - 6 * _ttl_ms())
    pipe.execute()


def leave(runtime: Runtime, member: str | None = None) -> None:
    """Remove `member` (default: this process, `runtime.worker_id`) from the presence set (on
    a clean shutdown). Never raises."""
    member = member or runtime.worker_id
    try:
        pipe = runtime.redis.pipeline(transaction=False)
        pipe.zrem(runtime.keys.presence, member)
        pipe.hdel(runtime.keys.presence_info, member)
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
    for (entry_id, score), raw in zip(entries, infos, strict=True):
        info = json.loads(raw) if raw else {}
        member = Member(
            id=str(entry_id),
            role=str(info.get("role", "")),
            queues=tuple(info.get("queues", ())),
            last_beat_ms=int(score),
        )
        if role is None or member.role == role:
            members.append(member)
    return sorted(members, key=lambda m: m.id)


def unconsumed(workers: Sequence[Member], queues: Sequence[str] = WORKER_QUEUES) -> list[str]:
    """Those of `queues` (by default the ones a worker takes unless told otherwise) that none
    of `workers` consumes: their runs wait. A worker that beat without naming its queues
    counts as consuming the default ones."""
    consumed = {queue for member in workers for queue in member.queues or WORKER_QUEUES}
    return [queue for queue in queues if queue not in consumed]


class Heartbeat:
    """A daemon thread that calls `beat` every `interval` seconds until `stop()`. A failed beat
    is logged and retried at the next interval; it never stops the thread. `beside`: the role
    is played beside the process's main one (`member_id`)."""

    def __init__(
        self,
        runtime: Runtime,
        role: str,
        queues: tuple[str, ...] = (),
        interval: float = PRESENCE_INTERVAL_S,
        *,
        beside: bool = False,
    ) -> None:
        self._runtime, self._role, self._queues, self._interval = runtime, role, queues, interval
        self._member = member_id(runtime, role, beside=beside)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="presence", daemon=True)

    def start(self) -> None:
        """Beat once now (so the process counts as live at once), then keep beating."""
        self._beat()
        self._thread.start()

    def stop(self) -> None:
        """Stop beating and leave the presence set."""
        self._stop.set()
        leave(self._runtime, self._member)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._beat()

    def _beat(self) -> None:
        try:
            beat(self._runtime, self._role, self._queues, self._member)
        except Exception as exc:  # Redis down: the next beat retries
            log.warning("presence beat failed: %s", type(exc).__name__)


def _ttl_ms() -> int:
    return int(PRESENCE_TTL_S * 1000)
