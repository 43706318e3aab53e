"""The engine's hook for committed steps (`Runtime.step_observers`): told once per step that
committed a result, never on replay, and never able to fail a step."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.step_observers import CommittedStep
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock

MODEL_ANSWER = {"model": "m-1", "usage": {"input_tokens": 7, "output_tokens": 3}, "text": "hi"}


class Seen:
    """A step observer that keeps what it is told."""

    def __init__(self) -> None:
        self.steps: list[CommittedStep] = []

    def step_committed(self, step: CommittedStep) -> None:
        self.steps.append(step)


class Broken:
    """A step observer that always fails."""

    def step_committed(self, step: CommittedStep) -> None:
        raise RuntimeError("observer is down")


def _start(runtime: Runtime, data: dict[str, Any]) -> str:
    runtime.register_functions()
    [run_id] = publish({"name": "app/go", "data": data}, runtime=runtime).run_ids
    return run_id


def test_observers_are_told_of_each_committed_step_with_its_usage(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given an observer, and a function with a plain step and a model-shaped one
    seen = Seen()
    runtime.step_observers.append(seen)

    @function(id="told", trigger=event("app/go"), registry=registry)
    def told(ctx: Context) -> None:
        ctx.step.run("plain", lambda: 1)
        ctx.step.run("think", lambda: MODEL_ANSWER)

    # When a run of it completes
    run_id = _start(runtime, {"session_key": "s-1"})
    drain(runtime)
    # Then the observer was told of both steps, in order, with the run's facts
    assert [(s.run_id, s.function_id, s.step_key) for s in seen.steps] == [
        (run_id, "told", "plain:0"),
        (run_id, "told", "think:0"),
    ]
    plain, think = seen.steps
    assert plain.usage is None, "a step that is no model call carries no usage"
    assert think.usage == {"model": "m-1", "in": 7, "out": 3, "cr": 0, "cw": 0}
    assert think.event["data"] == {"session_key": "s-1"}
    assert think.ended_ms == runtime.now_ms()


def test_a_replayed_step_is_not_told_again(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given an observer, and a function that makes a model call, sleeps, then goes on
    seen = Seen()
    runtime.step_observers.append(seen)

    @function(id="sleepy", trigger=event("app/go"), registry=registry)
    def sleepy(ctx: Context) -> None:
        ctx.step.run("think", lambda: MODEL_ANSWER)
        ctx.step.sleep("nap", 60)
        ctx.step.run("after", lambda: 2)

    run_id = _start(runtime, {})
    assert drain(runtime)[-1][1] == "suspended"
    # When it wakes and replays its journal to the step after the sleep
    clock.advance(61)
    drain(runtime)
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "completed"
    # Then the model step was told of once, when it ran, not again on the replay
    assert [s.step_key for s in seen.steps] == ["think:0", "after:0"]


def test_a_failing_observer_logs_one_warning_and_fails_nothing(
    runtime: Runtime,
    registry: FunctionRegistry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a failing observer before a working one
    seen = Seen()
    runtime.step_observers[:0] = [Broken()]
    runtime.step_observers.append(seen)

    @function(id="sturdy", trigger=event("app/go"), registry=registry)
    def sturdy(ctx: Context) -> int:
        return int(ctx.step.run("one", lambda: 1))

    # When a run of it completes
    run_id = _start(runtime, {})
    with caplog.at_level(logging.WARNING, logger="harness.runtime.step_observers"):
        drain(runtime)
    # Then the run completed, the next observer was still told, and one line says what failed
    record = runtime.ledger.run(run_id)
    assert record is not None and (record.status, record.result) == ("completed", 1)
    assert [s.step_key for s in seen.steps] == ["one:0"]
    warnings = [r.getMessage() for r in caplog.records if r.name.endswith("step_observers")]
    assert len(warnings) == 1, warnings
    assert "Broken" in warnings[0] and "observer is down" in warnings[0], warnings
