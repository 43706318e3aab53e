"""`step.wait_for_run`: a wait that another run's end resolves, including an end that falls
between the waiter's last look at that run and the wait's registration."""

from __future__ import annotations

from typing import Any

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock


def _status(runtime: Runtime, run_id: str) -> str:
    record = runtime.ledger.run(run_id)
    assert record is not None, f"run {run_id} has no record"
    return record.status


def _watcher(runtime: Runtime, registry: FunctionRegistry, *, end_child_in_gap: bool) -> list[Any]:
    """A `watcher` function that starts a `child` in the background, looks at it in a step
    (ending it there first when `end_child_in_gap`) and then waits for it. Returns what the
    watcher saw: the child's status at the look, then the wait's result."""
    seen: list[Any] = []

    @function(id="child", trigger=event("app/child"), registry=registry)
    def child(ctx: Context) -> str:
        return "done"

    @function(id="watcher", trigger=event("app/watch"), registry=registry)
    def watcher(ctx: Context) -> None:
        child_id = ctx.step.start("start", "child", {})

        def look() -> str:
            if end_child_in_gap:  # the child ends after this look, before the wait
                status = _status(runtime, child_id)
                advance(runtime, child_id)
                return status
            return _status(runtime, child_id)

        seen.append(ctx.step.run("look", look))
        seen.append(ctx.step.wait_for_run("wait", child_id, timeout="1h"))

    runtime.register_functions()
    return seen


def test_wait_for_run_sees_an_end_between_the_look_and_the_wait(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a watcher whose child ends after the watcher saw it queued, before it waits
    seen = _watcher(runtime, registry, end_child_in_gap=True)

    # When it runs (the clock never moves: no timeout can fire)
    run_id = publish({"name": "app/watch", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)

    # Then the wait saw the end at once, and the watcher completed
    assert seen == ["queued", True], f"expected the wait to see the child's end, saw {seen}"
    assert _status(runtime, run_id) == "completed"


def test_wait_for_run_is_woken_by_the_end(runtime: Runtime, registry: FunctionRegistry) -> None:
    # Given a watcher that waits for a child still queued
    seen = _watcher(runtime, registry, end_child_in_gap=False)
    run_id = publish({"name": "app/watch", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)

    # Then the child's end (in the same drain, no clock move) woke it
    assert seen[-1] is True, f"expected the child's end to wake the wait, saw {seen}"
    assert _status(runtime, run_id) == "completed"


def test_wait_for_run_times_out_false(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a watcher waiting for a run that never ends (nothing runs it)
    seen: list[bool] = []

    @function(id="watcher", trigger=event("app/watch"), registry=registry)
    def watcher(ctx: Context) -> None:
        seen.append(ctx.step.wait_for_run("wait", ctx.event.data["other"], timeout="1m"))

    @function(id="idle", trigger=event("app/idle"), registry=registry)
    def idle(ctx: Context) -> None:
        return None

    runtime.register_functions()
    other = publish({"name": "app/idle", "data": {}}, runtime=runtime).run_ids[0]
    runtime.kicker.pending.clear()  # type: ignore[attr-defined]  # the other run stays queued
    run_id = publish({"name": "app/watch", "data": {"other": other}}, runtime=runtime).run_ids[0]
    drain(runtime)
    assert _status(runtime, run_id) == "waiting"

    # When the timeout passes
    clock.advance(61)
    drain(runtime)

    # Then the wait returned False
    assert seen == [False]
    assert _status(runtime, run_id) == "completed"
