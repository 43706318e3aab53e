"""Cron: one run per tick with several schedulers; missed ticks recorded and caught up."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from harness.runtime import Context, Runtime, cron, function
from harness.runtime.cron_ticks import due_ticks, fire_due_ticks
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock


def _at(clock: ManualClock, iso: str) -> None:
    clock.now = datetime.fromisoformat(iso).timestamp()


def test_due_ticks_follow_the_time_zone() -> None:
    # 09:00 in Berlin is 08:00 UTC in winter
    trigger = cron("0 9 * * *", tz="Europe/Berlin")
    after = int(datetime(2026, 12, 1, 7, 0, tzinfo=ZoneInfo("UTC")).timestamp() * 1000)
    now = int(datetime(2026, 12, 1, 8, 30, tzinfo=ZoneInfo("UTC")).timestamp() * 1000)
    ticks = due_ticks(trigger, after, now)
    assert [t.isoformat() for t in ticks] == ["2026-12-01T09:00:00+01:00"]


def test_a_tick_fires_once_with_two_schedulers(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    ran: list[str] = []

    @function(id="digest", trigger=cron("*/5 * * * *"), registry=registry)
    def digest(ctx: Context) -> None:
        ran.append(ctx.event.data["tick"])

    runtime.register_functions()
    other_scheduler = Runtime(
        redis=runtime.redis, kicker=runtime.kicker, registry=registry, clock=clock
    )
    _at(clock, "2026-12-01T10:01:00+00:00")
    assert fire_due_ticks(runtime) == [], "the first sight only starts the count"
    _at(clock, "2026-12-01T10:05:01+00:00")
    fired = fire_due_ticks(runtime) + fire_due_ticks(other_scheduler)
    drain(runtime)
    assert len(fired) == 1
    assert ran == ["2026-12-01T10:05:00+00:00"]


def test_missed_ticks_are_recorded_and_caught_up_once(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    ran: list[dict[str, object]] = []

    @function(id="nightly", trigger=cron("0 * * * *"), catch_up=True, registry=registry)
    def nightly(ctx: Context) -> None:
        ran.append(ctx.event.data)

    @function(id="no-catch-up", trigger=cron("0 * * * *"), registry=registry)
    def no_catch_up(ctx: Context) -> None:
        ran.append({"unexpected": True})

    runtime.register_functions()
    _at(clock, "2026-12-01T10:30:00+00:00")
    fire_due_ticks(runtime)
    # nothing ran for three hours
    _at(clock, "2026-12-01T13:30:00+00:00")
    fire_due_ticks(runtime)
    drain(runtime)
    assert len(ran) == 1, f"expected one catch-up run, got {ran}"
    assert ran[0]["missed"] == [
        "2026-12-01T11:00:00+00:00",
        "2026-12-01T12:00:00+00:00",
        "2026-12-01T13:00:00+00:00",
    ]
    missed = runtime.redis.zrange(runtime.keys.cron_missed("no-catch-up"), 0, -1)
    assert len(missed) == 3, "missed ticks must be visible even without catch-up"
