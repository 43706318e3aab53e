"""Cron ticks claimed by several schedulers at once, on a real Redis."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime

import pytest
import redis

from harness.runtime import Context, Runtime, cron, function
from harness.runtime.cron_ticks import fire_due_ticks
from harness.runtime.functions import FunctionRegistry
from harness.runtime.keys import Keys
from harness.runtime.kicker import RecordingKicker
from tests.runtime_fixtures import ManualClock

pytestmark = pytest.mark.integration


def test_each_tick_fires_once_with_four_schedulers_racing(redis_url: str) -> None:
    # Given one cron function and four schedulers sharing a real Redis
    registry = FunctionRegistry()

    @function(id="racer", trigger=cron("* * * * *"), registry=registry)
    def racer(ctx: Context) -> None:
        return None

    keys = Keys(f"cron{uuid.uuid4().hex[:8]}")
    clock = ManualClock(now=datetime.fromisoformat("2026-12-01T10:00:30+00:00").timestamp())
    schedulers = [
        Runtime(
            redis=redis.Redis.from_url(redis_url, decode_responses=True),
            kicker=RecordingKicker(),
            registry=registry,
            keys=keys,
            clock=clock,
        )
        for _ in range(4)
    ]
    schedulers[0].register_functions()
    fire_due_ticks(schedulers[0])  # first sight: start counting
    fired: list[str] = []
    lock = threading.Lock()

    def tick(runtime: Runtime) -> None:
        ids = fire_due_ticks(runtime)
        with lock:
            fired.extend(ids)

    # When, at each of five minute boundaries, all four race to fire the due tick
    for minute in range(1, 6):
        clock.now += 60
        threads = [threading.Thread(target=tick, args=(rt,)) for rt in schedulers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(fired) == minute, f"after minute {minute}: {fired}"
    # Then exactly five distinct events were published, one per tick
    assert len(set(fired)) == 5
    runs = schedulers[0].redis.zcard(keys.runs)
    assert runs == 5
