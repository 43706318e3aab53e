"""Durable steps: memoized, retried, fenced, replayed after a crash."""

from __future__ import annotations

from typing import Any

import pytest

from harness.errors import NonRetriableError, StepFailedError
from harness.events import FUNCTION_FAILED, Event
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock


class WorkerKilled(BaseException):
    """Stands in for SIGKILL: unwinds out of the executor without any cleanup running."""


def _start(runtime: Runtime, name: str = "app/go", data: dict[str, Any] | None = None) -> str:
    runtime.register_functions()
    result = publish({"name": name, "data": data or {}}, runtime=runtime)
    assert len(result.run_ids) == 1, f"expected one run, got {result.run_ids}"
    return result.run_ids[0]


def test_step_memoized_result_is_not_recomputed_on_retry(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a function whose second step fails once
    calls: list[str] = []

    @function(id="memo", trigger=event("app/go"), retries=2, registry=registry)
    def memo(ctx: Context) -> int:
        a = ctx.step.run("first", lambda: calls.append("first") or 1)
        b = ctx.step.run("second", lambda: _flaky(calls))
        return int(a) + int(b)

    run_id = _start(runtime)
    # When it runs, fails, and is retried after the backoff
    assert drain(runtime)[-1][1] == "suspended"
    clock.advance(5)
    drain(runtime)
    # Then the first step ran once and the run completed
    assert calls == ["first", "second", "second"]
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "completed" and record.result == 3


def _flaky(calls: list[str]) -> int:
    calls.append("second")
    if calls.count("second") == 1:
        raise ConnectionError("transient")
    return 2


def test_repeated_step_ids_are_auto_indexed(runtime: Runtime, registry: FunctionRegistry) -> None:
    @function(id="loop", trigger=event("app/go"), registry=registry)
    def loop(ctx: Context) -> list[int]:
        return [ctx.step.run("think", lambda i=i: i * 10) for i in range(3)]

    run_id = _start(runtime)
    drain(runtime)
    assert set(runtime.ledger.journal(run_id)) == {"think:0", "think:1", "think:2"}
    assert runtime.ledger.run(run_id).result == [0, 10, 20]  # type: ignore[union-attr]


def test_crashed_worker_run_resumes_after_lease_expiry_without_redoing_steps(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a worker that dies after the first step completes
    calls: list[str] = []
    die = {"now": True}

    @function(id="crashy", trigger=event("app/go"), registry=registry)
    def crashy(ctx: Context) -> str:
        ctx.step.run("one", lambda: calls.append("one"))
        if die["now"]:
            die["now"] = False
            raise WorkerKilled()
        ctx.step.run("two", lambda: calls.append("two"))
        return "done"

    run_id = _start(runtime)
    with pytest.raises(WorkerKilled):
        drain(runtime)
    # When the lease expires and the reaper hands the run on
    assert drain(runtime) == [], "a live lease must not be taken over"
    clock.advance(runtime.lease_ttl + 1)
    outcomes = drain(runtime)
    # Then each step ran exactly once and the run completed
    assert (run_id, "completed") in outcomes
    assert calls == ["one", "two"]


def test_stale_epoch_cannot_write_the_journal(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    @function(id="fenced", trigger=event("app/go"), registry=registry)
    def fenced(ctx: Context) -> None:
        return None

    run_id = _start(runtime)
    first = runtime.ledger.claim(run_id, "a", runtime.now_ms(), 10_000, 250)
    clock.advance(11)
    second = runtime.ledger.claim(run_id, "b", runtime.now_ms(), 10_000, 250)
    assert (first.state, second.state) == ("ok", "ok")
    assert int(second.epoch) == int(first.epoch) + 1
    written, _ = runtime.ledger.commit_step(run_id, first.epoch, "x:0", '{"k":"run","v":1}')
    assert not written, "a write from the old epoch must be refused"
    written, _ = runtime.ledger.commit_step(run_id, second.epoch, "x:0", '{"k":"run","v":2}')
    assert written and runtime.ledger.journal(run_id)["x:0"]["v"] == 2


def test_duplicate_delivery_of_a_kick_is_a_no_op(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    calls: list[int] = []

    @function(id="once", trigger=event("app/go"), registry=registry)
    def once(ctx: Context) -> None:
        calls.append(1)
        assert advance(runtime, ctx.run_id) == "busy"

    run_id = _start(runtime)
    drain(runtime)
    assert advance(runtime, run_id) == "terminal"
    assert calls == [1]


def test_spent_retries_fail_the_run_and_publish_function_failed(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    failures: list[dict[str, Any]] = []

    @function(id="doomed", trigger=event("app/go"), retries=1, registry=registry)
    def doomed(ctx: Context) -> None:
        ctx.step.run("boom", _raise, RuntimeError("no luck"))

    @function(id="on-failure", trigger=event(FUNCTION_FAILED), registry=registry)
    def on_failure(ctx: Context) -> None:
        failures.append(ctx.event.data)

    run_id = _start(runtime)
    drain(runtime)
    clock.advance(5)
    drain(runtime)
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "failed"
    assert "no luck" in record.error
    assert [f["run_id"] for f in failures] == [run_id]
    assert failures[0]["function_id"] == "doomed" and "no luck" in failures[0]["error"]


def _raise(exc: Exception) -> None:
    raise exc


def test_non_retriable_error_skips_retries(runtime: Runtime, registry: FunctionRegistry) -> None:
    attempts: list[int] = []

    @function(id="final", trigger=event("app/go"), retries=5, registry=registry)
    def final(ctx: Context) -> None:
        ctx.step.run("bad", lambda: attempts.append(1) or _raise(NonRetriableError("bad input")))

    run_id = _start(runtime)
    drain(runtime)
    assert attempts == [1]
    assert runtime.ledger.run(run_id).status == "failed"  # type: ignore[union-attr]


def test_handler_can_catch_a_failed_step(runtime: Runtime, registry: FunctionRegistry) -> None:
    @function(id="catcher", trigger=event("app/go"), retries=0, registry=registry)
    def catcher(ctx: Context) -> str:
        try:
            ctx.step.run("bad", _raise, ValueError("nope"))
        except StepFailedError as exc:
            return f"handled: {exc.error}"
        return "unreachable"

    run_id = _start(runtime)
    drain(runtime)
    assert runtime.ledger.run(run_id).result == "handled: ValueError: nope"  # type: ignore[union-attr]


def test_non_json_step_result_fails_clearly_and_keeps_the_event(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    @function(id="setty", trigger=event("app/go"), registry=registry)
    def setty(ctx: Context) -> None:
        ctx.step.run("bad", lambda: {1, 2})

    run_id = _start(runtime, data={"keep": "me"})
    drain(runtime)
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "failed"
    assert "cannot be stored as JSON" in record.error and "'bad'" in record.error
    assert record.event["data"] == {"keep": "me"}, "the triggering event must be kept with the run"


def test_send_event_publishes_once_across_replays(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    received: list[str] = []
    flaky_calls: list[str] = []

    @function(id="sender", trigger=event("app/go"), retries=3, registry=registry)
    def sender(ctx: Context) -> None:
        ctx.step.send_event("tell", {"name": "app/told", "data": {}})
        ctx.step.run("flaky", _flaky, flaky_calls)  # fails once, forcing a replay

    @function(id="listener", trigger=event("app/told"), registry=registry)
    def listener(ctx: Context) -> None:
        received.append(ctx.event.id)

    _start(runtime)
    drain(runtime)
    clock.advance(5)
    drain(runtime)
    assert flaky_calls == ["second", "second"], "the run should have been replayed once"
    assert len(received) == 1


def test_send_event_of_an_event_without_an_id_derives_the_id_from_run_and_step(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a handler that sends an `Event` built without an id
    @function(id="sender", trigger=event("app/go"), registry=registry)
    def sender(ctx: Context) -> str:
        return ctx.step.send_event("tell", Event(name="app/told", data={"n": 1}))

    run_id = _start(runtime)
    # When it runs
    drain(runtime)
    # Then the id is the run's and the step's, so a replay that re-sends cannot duplicate it
    record = runtime.ledger.run(run_id)
    assert record is not None and record.result == f"{run_id}:tell:0", record


class RateLimited(Exception):
    """Like the platform and model errors: carries the server's `retry_after` hint."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"slow down for {retry_after}s")
        self.retry_after = retry_after


def test_retry_waits_at_least_as_long_as_the_error_asks(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a step rate-limited for 30 s (far beyond the 1 s backoff)
    calls: list[int] = []

    def limited() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RateLimited(30)
        return "ok"

    @function(id="polite", trigger=event("app/go"), retries=2, registry=registry)
    def polite(ctx: Context) -> str:
        return str(ctx.step.run("call", limited))

    run_id = _start(runtime)
    drain(runtime)
    # When only the backoff has passed, it has not retried; after the hint, it has
    clock.advance(5)
    drain(runtime)
    assert calls == [1], "the retry must wait for retry_after"
    clock.advance(26)
    drain(runtime)
    assert calls == [1, 1]
    assert runtime.ledger.run(run_id).status == "completed"  # type: ignore[union-attr]


def test_handler_errors_are_retried_at_most_retries_times_even_when_steps_run(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a handler that runs a fresh step on every attempt, then fails outside any step
    attempts: list[int] = []

    @function(id="stubborn", trigger=event("app/go"), retries=2, registry=registry)
    def stubborn(ctx: Context) -> None:
        attempts.append(ctx.attempt)
        ctx.step.run(f"fresh-{len(attempts)}", lambda: None)
        raise ValueError("always")

    run_id = _start(runtime)
    for _ in range(6):
        drain(runtime)
        clock.advance(60)
    # Then it ran once plus two retries, and failed
    assert len(attempts) == 3
    assert runtime.ledger.run(run_id).status == "failed"  # type: ignore[union-attr]


def test_run_of_a_function_this_worker_lacks_waits_for_it_then_fails_clearly(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a function registered by another process and not loaded here
    other = FunctionRegistry()

    @function(id="elsewhere", trigger=event("app/go"), registry=other)
    def elsewhere(ctx: Context) -> str:
        return "ran"

    Runtime(redis=runtime.redis, kicker=runtime.kicker, registry=other).register_functions()
    run_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    # When this worker claims it, it waits instead of failing
    drain(runtime)
    assert runtime.ledger.run(run_id).status == "sleeping"  # type: ignore[union-attr]
    # Then if the function shows up (a reload finished), the run completes
    registry.register(elsewhere)
    clock.advance(3)
    drain(runtime)
    assert runtime.ledger.run(run_id).status == "completed"  # type: ignore[union-attr]


def test_run_of_a_function_no_worker_has_fails_after_a_minute(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    other = FunctionRegistry()

    @function(id="ghost", trigger=event("app/go"), registry=other)
    def ghost(ctx: Context) -> None:
        return None

    Runtime(redis=runtime.redis, kicker=runtime.kicker, registry=other).register_functions()
    run_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    for _ in range(40):
        drain(runtime)
        clock.advance(3)
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "failed"
    assert "not loaded" in record.error


class Overloaded(Exception):
    """Like a transient model error: asks to be retried for `retry_for` seconds."""

    def __init__(self, retry_for: float) -> None:
        super().__init__("overloaded")
        self.retry_for = retry_for


@pytest.mark.parametrize(("retry_for", "outcome"), [(120.0, "completed"), (0.0, "failed")])
def test_an_error_with_a_retry_budget_is_retried_past_the_count_until_the_budget_ends(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock, retry_for: float,
    outcome: str,
) -> None:  # fmt: skip
    # Given a step that fails five times in a row, with one retry allowed by count
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) <= 5:
            raise Overloaded(retry_for)
        return "ok"

    @function(id="patient", trigger=event("app/go"), retries=1, registry=registry)
    def patient(ctx: Context) -> str:
        return str(ctx.step.run("call", flaky))

    run_id = _start(runtime)
    # When time passes in steps of the backoff's size
    drain(runtime)
    for _ in range(8):
        clock.advance(20)
        drain(runtime)
    # Then with a 120 s budget it is retried until it succeeds; without one, once only
    assert runtime.ledger.run(run_id).status == outcome  # type: ignore[union-attr]
    assert len(calls) == (6 if retry_for else 2)


def test_a_retry_budget_ends_the_step_once_spent(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a step that always fails, asking to be retried for 30 s after its first failure
    calls: list[int] = []

    def down() -> None:
        calls.append(1)
        raise Overloaded(30)

    @function(id="gives-up", trigger=event("app/go"), retries=0, registry=registry)
    def gives_up(ctx: Context) -> None:
        ctx.step.run("call", down)

    run_id = _start(runtime)
    # When a minute passes
    drain(runtime)
    for _ in range(12):
        clock.advance(5)
        drain(runtime)
    # Then it was retried within the 30 s only, and the run failed with its error
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "failed" and "overloaded" in record.error
    assert 2 < len(calls) < 12, calls


def test_started_ms_is_when_the_first_attempt_began_on_every_attempt(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a function that notes `started_ms` on each attempt, and fails its first
    seen: list[tuple[int, int]] = []

    @function(id="clocked", trigger=event("app/go"), retries=2, registry=registry)
    def clocked(ctx: Context) -> None:
        seen.append((ctx.started_ms, ctx.runtime.now_ms()))
        if len(seen) == 1:
            raise ConnectionError("transient")

    first_ms = runtime.now_ms()
    run_id = _start(runtime)
    # When it runs, fails, and is tried again a minute later
    drain(runtime)
    clock.advance(60)
    drain(runtime)
    # Then both attempts saw the first attempt's start, not their own
    assert [started for started, _ in seen] == [first_ms, first_ms], f"got {seen}"
    assert seen[1][1] >= first_ms + 60_000, "the second attempt ran a minute later"
    assert runtime.ledger.run(run_id).status == "completed"  # type: ignore[union-attr]
