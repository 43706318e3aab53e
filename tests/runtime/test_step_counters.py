"""The `/metrics` step counters ride with the step's own commit (`harness.runtime.step_counters`):
on a real Redis, committing a step on the fleet's runtime is one round trip, the counters it
adds are read back by `read_fleet_metrics`, and a step fenced out counts nothing."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
import redis

from harness.composition import extend_runtime
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.fleet_metrics import read_fleet_metrics
from harness.runtime.functions import FunctionRegistry
from harness.runtime.keys import Keys
from harness.runtime.kicker import RecordingKicker
from harness.runtime.step_counters import step_counts
from harness.runtime.testing import drain

MODEL_ANSWER: dict[str, object] = {
    "model": "claude-sonnet-5",
    "usage": {"input_tokens": 1200, "output_tokens": 34},
    "text": "hi",
}


class CountingConnection(redis.Connection):
    """A real connection that counts, per thread, the requests it writes to Redis: one per
    command, one per pipeline (redis-py writes a pipeline's commands in one packed send)."""

    sent: ClassVar[Counter[int]] = Counter()

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sent[threading.get_ident()] += 1
        super().send_packed_command(command, check_health)


@pytest.fixture
def counted_runtime(redis_url: str, registry: FunctionRegistry) -> Iterator[Runtime]:
    """The fleet's runtime (`extend_runtime`) on the session's real Redis, its requests
    counted by `CountingConnection`."""
    pool = redis.ConnectionPool.from_url(
        redis_url, connection_class=CountingConnection, decode_responses=True
    )
    client = redis.Redis(connection_pool=pool)
    runtime = Runtime(
        redis=client, kicker=RecordingKicker(), registry=registry, keys=Keys("counted")
    )
    yield extend_runtime(runtime)
    client.flushall()
    pool.disconnect()


def test_committing_a_step_is_one_redis_round_trip_on_the_fleet_runtime(
    counted_runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a function whose second and third steps note how many requests their thread sent
    seen: list[int] = []

    def note() -> int:
        seen.append(CountingConnection.sent[threading.get_ident()])
        return len(seen)

    @function(id="counted", trigger=event("app/go"), registry=registry)
    def counted(ctx: Context) -> None:
        ctx.step.run("first", int, 1)
        ctx.step.run("note", note)
        ctx.step.run("note", note)

    counted_runtime.register_functions()
    publish({"name": "app/go"}, runtime=counted_runtime)
    # When the run executes
    drain(counted_runtime)
    # Then between the two notes the thread sent one request: the middle step's commit,
    # counters included
    assert len(seen) == 2, seen
    assert seen[1] - seen[0] == 1, f"committing one step sent {seen[1] - seen[0]} requests"


def test_committed_steps_and_model_tokens_reach_the_fleet_counters(
    counted_runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a function with a plain step and a model call
    @function(id="thinker", trigger=event("app/go"), registry=registry)
    def thinker(ctx: Context) -> None:
        ctx.step.run("plain", int, 1)
        ctx.step.run("think", lambda: MODEL_ANSWER)

    counted_runtime.register_functions()
    publish({"name": "app/go"}, runtime=counted_runtime)
    # When the run executes on a real Redis
    drain(counted_runtime)
    snapshot = read_fleet_metrics(counted_runtime)
    # Then both steps are in the function's histogram and the call's tokens in its model's
    assert sum(snapshot.steps["thinker"].counts) == 2
    assert snapshot.tokens[("claude-sonnet-5", "calls")] == 1
    assert snapshot.tokens[("claude-sonnet-5", "in")] == 1200
    assert snapshot.tokens[("claude-sonnet-5", "out")] == 34


def test_a_step_fenced_out_adds_nothing_to_the_counters(counted_runtime: Runtime) -> None:
    # Given a run that no worker holds
    counted_runtime.register_functions()
    # When a commit with counters arrives under an epoch that is not the run's
    counts = step_counts("ghost", 1_000, 1_020, {"model": "m", "in": 5})
    written, _ = counted_runtime.ledger.commit_step(
        "no-such-run", "7", "plain:0", '{"k":"run","v":1}', counts
    )
    # Then nothing is written and nothing counted
    assert not written
    assert counted_runtime.redis.hgetall(counted_runtime.keys.metrics_steps) == {}
    assert counted_runtime.redis.hgetall(counted_runtime.keys.metrics_tokens) == {}


def test_a_model_call_of_unknown_start_counts_its_tokens_but_no_duration(
    counted_runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run this worker holds
    @function(id="held", trigger=event("app/go"), registry=registry)
    def held(ctx: Context) -> None: ...

    counted_runtime.register_functions()
    run_id = publish({"name": "app/go"}, runtime=counted_runtime).run_ids[0]
    claim = counted_runtime.ledger.claim(run_id, "w", counted_runtime.now_ms(), 10_000, 250)
    # When it commits a model call whose start is unknown (0)
    counts = step_counts("held", 0, 1_020, {"model": "m", "in": 5, "out": 0})
    written, _ = counted_runtime.ledger.commit_step(
        run_id, claim.epoch, "think:0", '{"k":"run","v":1}', counts
    )
    # Then its tokens are counted (the zero ones not at all) and no duration is
    assert written
    tokens = counted_runtime.redis.hgetall(counted_runtime.keys.metrics_tokens)
    assert tokens == {"m\tcalls": "1", "m\tin": "5"}
    assert counted_runtime.redis.hgetall(counted_runtime.keys.metrics_steps) == {}
