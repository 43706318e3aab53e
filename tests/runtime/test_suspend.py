"""Sleeping, waiting for events and invoking other functions, without holding a worker."""

from __future__ import annotations

from typing import Any

from harness.runtime import Context, Runtime, event, function, publish, run_id_for
from harness.runtime.functions import FunctionRegistry
from harness.runtime.ledger import RunParent
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock


def _status(runtime: Runtime, run_id: str) -> str:
    record = runtime.ledger.run(run_id)
    assert record is not None, f"run {run_id} has no record"
    return record.status


def test_sleep_suspends_and_resumes_when_due(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    @function(id="napper", trigger=event("app/go"), registry=registry)
    def napper(ctx: Context) -> str:
        ctx.step.sleep("nap", "1h")
        return "awake"

    runtime.register_functions()
    run_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    drain(runtime)
    assert _status(runtime, run_id) == "sleeping"
    clock.advance(3599)
    drain(runtime)
    assert _status(runtime, run_id) == "sleeping", "must not wake before the hour is up"
    clock.advance(2)
    drain(runtime)
    assert _status(runtime, run_id) == "completed"


def test_wait_for_event_resumes_with_the_matching_event(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    got: list[Any] = []

    @function(id="approver", trigger=event("app/order.created"), registry=registry)
    def approver(ctx: Context) -> None:
        answer = ctx.step.wait_for_event(
            "approval", event="app/order.approved", match="data.order_id", timeout="4h"
        )
        got.append(answer.data if answer else None)

    runtime.register_functions()
    run_id = publish(
        {"name": "app/order.created", "data": {"order_id": 7}}, runtime=runtime
    ).run_ids[0]
    drain(runtime)
    assert _status(runtime, run_id) == "waiting"
    publish({"name": "app/order.approved", "data": {"order_id": 8}}, runtime=runtime)
    drain(runtime)
    assert _status(runtime, run_id) == "waiting", "an event for another order must not match"
    publish({"name": "app/order.approved", "data": {"order_id": 7, "by": "ana"}}, runtime=runtime)
    drain(runtime)
    assert got == [{"order_id": 7, "by": "ana"}]
    assert _status(runtime, run_id) == "completed"


def test_wait_for_event_returns_none_on_timeout(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    got: list[Any] = []

    @function(id="patient", trigger=event("app/go"), registry=registry)
    def patient(ctx: Context) -> None:
        got.append(ctx.step.wait_for_event("reply", event="app/reply", timeout="10m"))

    runtime.register_functions()
    run_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    drain(runtime)
    clock.advance(601)
    drain(runtime)
    assert got == [None]
    publish({"name": "app/reply"}, runtime=runtime)
    drain(runtime)
    assert got == [None], "a late event must not resume a finished wait"
    assert _status(runtime, run_id) == "completed"


def test_invoke_returns_the_child_result(runtime: Runtime, registry: FunctionRegistry) -> None:
    @function(id="double", trigger=event("app/never"), registry=registry)
    def double(ctx: Context) -> int:
        return int(ctx.event.data["n"]) * 2

    @function(id="parent", trigger=event("app/go"), registry=registry)
    def parent(ctx: Context) -> int:
        return int(ctx.step.invoke("child", "double", {"n": 21})) + 0

    runtime.register_functions()
    run_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    drain(runtime)
    assert runtime.ledger.run(run_id).result == 42  # type: ignore[union-attr]


def test_an_invoked_runs_record_names_its_parent_and_its_times(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a parent that invokes a child
    @function(id="child", trigger=event("app/never"), registry=registry)
    def child(ctx: Context) -> str:
        return "done"

    @function(id="parent", trigger=event("app/go"), registry=registry)
    def parent(ctx: Context) -> str:
        return str(ctx.step.invoke("call", "child", {"n": 1}))

    runtime.register_functions()
    parent_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    # When both run to the end
    drain(runtime)
    # Then the child's record is typed: its parent, its event, its result and its times
    child_record = runtime.ledger.run(run_id_for("child", f"{parent_id}:call:0"))
    assert child_record is not None, "the invoked child must have a run record"
    assert child_record.parent == RunParent(run_id=parent_id, step="call:0")
    assert child_record.event["data"] == {"n": 1} and child_record.result == "done"
    now_ms = int(clock.now * 1000)
    assert child_record.created_at == child_record.ended_at == now_ms, child_record
    assert {r.id for r in runtime.ledger.recent(5)} == {parent_id, child_record.id}


def test_invoke_raises_when_the_child_fails(runtime: Runtime, registry: FunctionRegistry) -> None:
    @function(id="broken", trigger=event("app/never"), retries=0, registry=registry)
    def broken(ctx: Context) -> None:
        raise ValueError("child exploded")

    @function(id="caller", trigger=event("app/go"), registry=registry)
    def caller(ctx: Context) -> str:
        try:
            ctx.step.invoke("child", "broken")
        except Exception as exc:
            return str(exc)
        return "no error"

    runtime.register_functions()
    run_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    drain(runtime)
    assert "child exploded" in runtime.ledger.run(run_id).result  # type: ignore[union-attr]


def test_start_runs_a_detached_child_listed_under_its_parent(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a parent that starts a child without waiting for it, then ends
    ran: list[str] = []

    @function(id="child", trigger=event("app/never"), registry=registry)
    def child(ctx: Context) -> str:
        ran.append(ctx.run_id)
        return "child done"

    @function(id="parent", trigger=event("app/go"), registry=registry)
    def parent(ctx: Context) -> str:
        return ctx.step.start("spawn", "child", {"n": 1})

    runtime.register_functions()
    parent_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]

    # When both run
    drain(runtime)

    # Then the parent returned the child's run id without waiting, the child ran once, is
    # listed under the parent as detached, and its end wrote nothing into the parent's journal
    child_id = run_id_for("child", f"{parent_id}:spawn:0")
    assert runtime.ledger.run(parent_id).result == child_id  # type: ignore[union-attr]
    assert ran == [child_id]
    record = runtime.ledger.run(child_id)
    assert record is not None and record.status == "completed"
    assert record.parent == RunParent(run_id=parent_id, step="spawn:0", detached=True)
    listed = runtime.run_index.newest(runtime.keys.runs_of_parent(parent_id), 0, 0, 10)
    assert listed == [child_id]
    assert runtime.ledger.journal(parent_id)["spawn:0"]["v"] == child_id
