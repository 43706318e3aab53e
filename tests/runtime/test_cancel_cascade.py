"""Cancelling a run cancels the runs it started that are still live: the ones it waits for
(`step.invoke`) and the detached ones (`step.start`), and theirs in turn."""

from __future__ import annotations

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import kick_all
from harness.runtime.testing import drain


def _status(runtime: Runtime, run_id: str) -> str:
    record = runtime.ledger.run(run_id)
    assert record is not None, f"run {run_id} has no record"
    return record.status


def test_cancel_cascades_to_live_children(runtime: Runtime, registry: FunctionRegistry) -> None:
    started: dict[str, str] = {}

    @function(id="napper", trigger=event("app/nap"), registry=registry)
    def napper(ctx: Context) -> None:
        if ctx.event.data.get("deeper"):  # a grandchild, started detached
            started["grandchild"] = ctx.step.start("deeper", "napper", {})
        ctx.step.sleep("nap", "1h")

    @function(id="parent", trigger=event("app/go"), registry=registry)
    def parent(ctx: Context) -> None:
        started["detached"] = ctx.step.start("bg", "napper", {"deeper": True})
        ctx.step.invoke("sync", "napper", {})

    runtime.register_functions()
    # Given a parent waiting for a child, with a detached child that started one of its own
    parent_id = publish({"name": "app/go", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)
    children = {r.id: r.status for r in runtime.run_index.records(
        runtime.run_index.newest(runtime.keys.runs_of_parent(parent_id), 0, 0, 10))}  # fmt: skip
    assert sorted(children.values()) == ["sleeping", "sleeping"], children
    assert _status(runtime, started["grandchild"]) == "sleeping"

    # When the parent is cancelled (as `harness runs cancel` does)
    _live, kicks = runtime.ledger.request_cancel(parent_id, "stop", runtime.now_ms())
    kick_all(runtime.kicker, kicks)
    drain(runtime)

    # Then the parent, both children and the grandchild are cancelled, and nothing is queued
    assert _status(runtime, parent_id) == "cancelled"
    for child in [*children, started["grandchild"]]:
        assert _status(runtime, child) == "cancelled", f"{child} should have been cancelled"
    record = runtime.ledger.run(started["detached"])
    assert record is not None and f"parent run {parent_id} was cancelled" in record.error
    assert runtime.redis.zcard(runtime.keys.ready) == 0


def test_cancel_leaves_ended_children_alone(runtime: Runtime, registry: FunctionRegistry) -> None:
    @function(id="quick", trigger=event("app/quick"), registry=registry)
    def quick(ctx: Context) -> str:
        return "done"

    @function(id="parent", trigger=event("app/go"), registry=registry)
    def parent(ctx: Context) -> None:
        ctx.step.invoke("sync", "quick", {})
        ctx.step.sleep("nap", "1h")

    runtime.register_functions()
    # Given a parent whose child completed, sleeping afterwards
    parent_id = publish({"name": "app/go", "data": {}}, runtime=runtime).run_ids[0]
    drain(runtime)
    [child] = runtime.run_index.newest(runtime.keys.runs_of_parent(parent_id), 0, 0, 10)

    # When the parent is cancelled
    _live, kicks = runtime.ledger.request_cancel(parent_id, "stop", runtime.now_ms())
    kick_all(runtime.kicker, kicks)
    drain(runtime)

    # Then the child stays completed
    assert _status(runtime, parent_id) == "cancelled"
    assert _status(runtime, child) == "completed"
