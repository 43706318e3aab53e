"""Per-day token totals and the step observer that adds to them. Contract tests run on the
Redis store (fakeredis) and on its in-memory twin (`usage`)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from harness.composition import extend_runtime
from harness.records.usage import (
    MemoryUsageStore,
    RedisUsageStore,
    UsageRecorder,
    UsageRow,
    UsageStore,
    usage_store,
)
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.step_observers import CommittedStep
from harness.runtime.testing import drain

DAY_MS = 86_400_000
MAY_1 = 1_777_593_600_000  # 2026-05-01T00:00:00Z


@pytest.fixture(params=["redis", "memory"])
def usage(request: pytest.FixtureRequest, runtime: Runtime) -> UsageStore:
    """The usage store, once on Redis (fakeredis) and once in memory."""
    if request.param == "redis":
        return RedisUsageStore(runtime.redis, runtime.keys)
    return MemoryUsageStore()


def test_usage_totals_add_up_per_day_model_session_and_function(usage: UsageStore) -> None:
    # Given three calls on May 1 (two of them alike) and one on May 2
    usage.add(MAY_1 + 5, {"model": "m", "in": 10, "out": 1, "cr": 4}, session="s", function="f")
    usage.add(MAY_1 + 9, {"model": "m", "in": 20, "out": 2, "cw": 3}, session="s", function="f")
    usage.add(MAY_1 + 9, {"model": "a", "in": 1}, session="", function="g")
    usage.add(MAY_1 + DAY_MS, {"model": "m", "out": 5}, session="s", function="f")
    # When the two days are read
    rows = usage.rows(date(2026, 5, 1), date(2026, 5, 2))
    # Then alike calls are summed, each day sorted by model, session and function
    assert rows == [
        UsageRow(day="2026-05-01", model="a", function="g", input_tokens=1, calls=1),
        UsageRow(
            day="2026-05-01", model="m", session="s", function="f", input_tokens=30,
            output_tokens=3, cache_read_tokens=4, cache_write_tokens=3, calls=2,
        ),
        UsageRow(
            day="2026-05-02", model="m", session="s", function="f", output_tokens=5, calls=1
        ),
    ]  # fmt: skip


def test_usage_rows_cover_only_the_days_asked_for(usage: UsageStore) -> None:
    # Given calls on May 1 and May 3
    usage.add(MAY_1, {"model": "m", "in": 1}, session="s", function="f")
    usage.add(MAY_1 + 2 * DAY_MS, {"model": "m", "in": 3}, session="s", function="f")
    # When May 2 to May 3 is read
    rows = usage.rows(date(2026, 5, 2), date(2026, 5, 3))
    # Then only May 3 is there
    assert [(r.day, r.input_tokens) for r in rows] == [("2026-05-03", 3)]


def _committed(usage: dict[str, object] | None, session: str = "s-9") -> CommittedStep:
    return CommittedStep(
        run_id="r-1", function_id="chat", event={"data": {"reply": {"session_key": session}}},
        step_key="think:0", usage=usage, ended_ms=MAY_1,
    )  # fmt: skip


def test_usage_recorder_adds_model_calls_under_the_runs_session_and_function(
    usage: UsageStore,
) -> None:
    # Given a recorder on the store
    recorder = UsageRecorder(usage)
    # When it is told of a model call and of a step that was none
    recorder.step_committed(_committed({"model": "m", "in": 4, "out": 2}))
    recorder.step_committed(_committed(None))
    # Then only the model call is counted, on the step's day, under the event's session
    assert usage.rows(date(2026, 5, 1), date(2026, 5, 1)) == [
        UsageRow(
            day="2026-05-01", model="m", session="s-9", function="chat", input_tokens=4,
            output_tokens=2, calls=1,
        )
    ]  # fmt: skip


def test_redis_usage_keeps_one_hash_per_day_for_the_retention(runtime: Runtime) -> None:
    # Given a Redis store keeping totals 3 days
    store = RedisUsageStore(runtime.redis, runtime.keys, retention_s=3 * 86_400)
    # When a call is added on May 1
    store.add(MAY_1, {"model": "m", "in": 1}, session="s", function="f")
    # Then it lands in that day's hash, under the key format readers of old data rely on
    key = f"{runtime.keys.prefix}:usage:2026-05-01"
    assert runtime.redis.hgetall(key) == {"m|s|f|in": "1", "m|s|f|calls": "1"}
    assert runtime.redis.ttl(key) == 3 * 86_400


def test_the_fleets_runtime_counts_a_model_call_once_even_extended_twice(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given the fleet's runtime (the fixture's is extended already), extended once more
    extend_runtime(extend_runtime(runtime, usage_retention_s=86_400))

    @function(id="asker", trigger=event("app/ask"), registry=registry)
    def asker(ctx: Context) -> None:
        ctx.step.run("think", lambda: {"model": "m", "usage": {"input_tokens": 5}})

    # When a run making one model call completes
    runtime.register_functions()
    publish({"name": "app/ask", "data": {"session_key": "s-1"}}, runtime=runtime)
    drain(runtime)
    # Then the day's totals hold that call once, kept for the default 90 days
    today = datetime.fromtimestamp(runtime.clock(), UTC).date()
    rows = usage_store(runtime).rows(today, today)
    assert [(r.session, r.function, r.input_tokens, r.calls) for r in rows] == [
        ("s-1", "asker", 5, 1)
    ]
    [key] = runtime.redis.keys(f"{runtime.keys.prefix}:usage:*")
    assert runtime.redis.ttl(key) == 90 * 86_400
