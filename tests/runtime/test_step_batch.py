"""`step.run_all`: independent steps at once, each recorded once, on the keys `run` gives."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from harness.errors import NonRetriableError, StepFailedError
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock

WAIT = 10.0  # seconds a thread waits for the other before the test fails (never reached)


class WorkerKilled(BaseException):
    """Stands in for SIGKILL: unwinds out of the executor without any cleanup running."""


def _start(runtime: Runtime) -> str:
    runtime.register_functions()
    return publish({"name": "app/go", "data": {}}, runtime=runtime).run_ids[0]


def _both_here(barrier: threading.Barrier, name: str) -> str:
    barrier.wait(WAIT)  # breaks (and fails the step) unless the other call runs meanwhile
    return name


def test_run_all_runs_the_calls_at_once_and_returns_them_in_call_order(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given two steps that each wait for the other to be running
    barrier = threading.Barrier(2)

    @function(id="pair", trigger=event("app/go"), retries=0, registry=registry)
    def pair(ctx: Context) -> list[Any]:
        found = ctx.step.run_all("tool", _both_here, [(barrier, "a"), (barrier, "b")], workers=4)
        return [str(r) if isinstance(r, StepFailedError) else r for r in found]

    # When the run runs
    run_id = _start(runtime)
    drain(runtime)
    # Then both met (they overlapped), in call order, on the keys sequential steps would take
    record = runtime.ledger.run(run_id)
    assert record is not None and record.result == ["a", "b"], record
    assert set(runtime.ledger.journal(run_id)) == {"tool:0", "tool:1"}


def test_run_all_replays_a_journal_written_by_sequential_runs(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose first execution recorded two steps one by one, then died
    calls: list[str] = []
    first = {"execution": True}

    @function(id="upgraded", trigger=event("app/go"), registry=registry)
    def upgraded(ctx: Context) -> list[Any]:
        if first["execution"]:
            first["execution"] = False
            ctx.step.run("tool", calls.append, "a")
            ctx.step.run("tool", calls.append, "b")
            raise WorkerKilled()
        return ctx.step.run_all("tool", calls.append, [("a",), ("b",), ("c",)], workers=2)

    run_id = _start(runtime)
    with pytest.raises(WorkerKilled):
        drain(runtime)
    # When the next execution asks for the same steps, and one more, as a batch
    clock.advance(runtime.lease_ttl + 1)
    drain(runtime)
    # Then only the new one ran
    assert calls == ["a", "b", "c"]
    assert runtime.ledger.run(run_id).status == "completed"  # type: ignore[union-attr]


def test_a_worker_dying_mid_batch_keeps_the_calls_that_were_recorded(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a batch whose second call kills the worker once the first call is recorded
    calls: list[str] = []
    died: list[bool] = []

    def work(name: str) -> str:
        calls.append(name)
        if name == "dies" and not died:
            died.append(True)
            journal = runtime.keys.journal(run_id)
            while not runtime.redis.hexists(journal, "tool:0"):
                threading.Event().wait(0.01)  # until the first call's result is recorded
            raise WorkerKilled()
        return name

    @function(id="dying", trigger=event("app/go"), registry=registry)
    def dying(ctx: Context) -> list[Any]:
        return ctx.step.run_all("tool", work, [("kept",), ("dies",)], workers=2)

    run_id = _start(runtime)
    with pytest.raises(WorkerKilled):
        drain(runtime)
    # When the run resumes on another worker
    clock.advance(runtime.lease_ttl + 1)
    drain(runtime)
    # Then the recorded call did not run again, the other did
    assert sorted(calls) == ["dies", "dies", "kept"]
    assert runtime.ledger.run(run_id).result == ["kept", "dies"]  # type: ignore[union-attr]


def test_a_call_to_retry_parks_the_run_after_the_others_are_recorded(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a batch whose first call fails once
    calls: list[str] = []

    def work(name: str) -> str:
        calls.append(name)
        if name == "flaky" and calls.count("flaky") == 1:
            raise ConnectionError("transient")
        return name

    @function(id="retrying", trigger=event("app/go"), retries=2, registry=registry)
    def retrying(ctx: Context) -> list[Any]:
        return ctx.step.run_all("tool", work, [("flaky",), ("steady",)], workers=2)

    # When it runs, parks, and is retried after the backoff
    run_id = _start(runtime)
    assert drain(runtime)[-1][1] == "suspended"
    clock.advance(5)
    drain(runtime)
    # Then only the failed call ran again
    assert sorted(calls) == ["flaky", "flaky", "steady"]
    assert runtime.ledger.run(run_id).result == ["flaky", "steady"]  # type: ignore[union-attr]


def test_a_call_that_fails_for_good_is_its_step_failed_error(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a batch whose second call fails for good
    def work(name: str) -> str:
        if name == "bad":
            raise NonRetriableError("bad input")
        return name

    @function(id="failing", trigger=event("app/go"), registry=registry)
    def failing(ctx: Context) -> list[Any]:
        found = ctx.step.run_all("tool", work, [("good",), ("bad",)], workers=2)
        return [r.error if isinstance(r, StepFailedError) else r for r in found]

    # When it runs
    run_id = _start(runtime)
    drain(runtime)
    # Then the handler gets the good result and the failure, in call order
    record = runtime.ledger.run(run_id)
    assert record is not None and record.result == ["good", "NonRetriableError: bad input"]
