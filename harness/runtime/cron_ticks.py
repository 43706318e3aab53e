"""Cron ticks: each fires exactly once however many schedulers run; missed ones are recorded.

Every cron trigger keeps the last tick it handled in Redis. A scheduler that finds ticks due
claims them all by compare-and-set on that value, so only one scheduler publishes them, and
each cron event's id is derived from its tick, so even a double claim would run once.
A tick more than `GRACE_MS` late was missed (nothing was running): it is recorded, and a
function declared with `catch_up=True` gets one run for all the missed ticks.
"""

from __future__ import annotations

import logging
import zoneinfo
from datetime import datetime

from croniter import croniter

from harness.envelope import CronTick, Event
from harness.runtime import scripts
from harness.runtime.bus import publish
from harness.runtime.bus_errors import on_bus
from harness.runtime.functions import CRON_EVENT, CronTrigger, FunctionSpec
from harness.runtime.instance import Runtime

log = logging.getLogger(__name__)
GRACE_MS = 60_000
MAX_TICKS_PER_PASS = 1_000


def due_ticks(trigger: CronTrigger, after_ms: int, now_ms: int) -> list[datetime]:
    """Ticks of the trigger strictly after `after_ms` and at or before `now_ms`, in its zone."""
    tz = zoneinfo.ZoneInfo(trigger.tz)
    it = croniter(trigger.expression, datetime.fromtimestamp(after_ms / 1000, tz))
    ticks: list[datetime] = []
    while len(ticks) < MAX_TICKS_PER_PASS:
        tick = it.get_next(datetime)
        if tick.timestamp() * 1000 > now_ms:
            break
        ticks.append(tick)
    return ticks


@on_bus("fire the due cron ticks")
def fire_due_ticks(runtime: Runtime, specs: list[FunctionSpec] | None = None) -> list[str]:
    """Publish the cron events that are due now. Returns the ids of events published.

    Safe to call from any number of schedulers at once. Raises `BusUnavailableError` when
    Redis fails (ticks already published stay published; the rest are due next pass).
    """
    now_ms = runtime.now_ms()
    cas = scripts.load(runtime.redis, "cron_claim_ticks")
    published: list[str] = []
    for spec in specs if specs is not None else runtime.triggers.specs():
        for index, trigger in enumerate(spec.triggers):
            if isinstance(trigger, CronTrigger):
                published += _fire_trigger(runtime, cas, spec, index, trigger, now_ms)
    return published


def _fire_trigger(
    runtime: Runtime, cas: object, spec: FunctionSpec, index: int, trigger: CronTrigger, now_ms: int
) -> list[str]:
    last_key = runtime.keys.cron_last(spec.id, index)
    last = runtime.redis.get(last_key)
    if last is None:
        # first sight of this trigger: start counting from now, nothing is owed yet
        runtime.redis.set(last_key, str(now_ms), nx=True)
        return []
    ticks = due_ticks(trigger, int(last), now_ms)
    if not ticks:
        return []
    newest_ms = int(ticks[-1].timestamp() * 1000)
    if not cas(keys=[last_key], args=[last, str(newest_ms)]):  # type: ignore[operator]
        return []  # another scheduler claimed these ticks
    on_time = [t for t in ticks if now_ms - t.timestamp() * 1000 <= GRACE_MS]
    missed = [t for t in ticks if now_ms - t.timestamp() * 1000 > GRACE_MS]
    ids: list[str] = []
    if missed:
        runtime.redis.zadd(
            runtime.keys.cron_missed(spec.id), {t.isoformat(): t.timestamp() for t in missed}
        )
        log.warning("cron %s: %d tick(s) missed, last %s", spec.id, len(missed), missed[-1])
        if spec.catch_up:
            ids.append(_publish_tick(runtime, spec, index, missed[-1], missed))
    for tick in on_time:
        ids.append(_publish_tick(runtime, spec, index, tick, []))
    return ids


def _publish_tick(
    runtime: Runtime, spec: FunctionSpec, index: int, tick: datetime, missed: list[datetime]
) -> str:
    kind = "catchup" if missed else "tick"
    event = Event(
        name=CRON_EVENT,
        id=f"cron:{spec.id}:{index}:{kind}:{int(tick.timestamp())}",
        data=CronTick(
            function_id=spec.id, tick=tick.isoformat(), missed=[t.isoformat() for t in missed]
        ).model_dump(mode="json"),
    )
    return publish(event, runtime=runtime).event_id
