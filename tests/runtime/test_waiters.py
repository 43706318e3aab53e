"""Waiters indexed by event name and match value: a publish looks only at its own buckets."""

from __future__ import annotations

import json
from typing import Any

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock


def _register_approver(registry: FunctionRegistry, runtime: Runtime, got: list[Any]) -> None:
    @function(id="approver", trigger=event("app/order.created"), registry=registry)
    def approver(ctx: Context) -> None:
        answer = ctx.step.wait_for_event(
            "approval", event="app/order.approved", match="data.order_id", timeout="1h"
        )
        got.append(answer.data["order_id"] if answer else None)

    runtime.register_functions()


def _status(runtime: Runtime, run_id: str) -> str:
    record = runtime.ledger.run(run_id)
    assert record is not None
    return record.status


def test_a_publish_wakes_only_the_waiters_of_its_value(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given 200 runs waiting for approvals of 200 different orders
    got: list[Any] = []
    _register_approver(registry, runtime, got)
    runs = [
        publish({"name": "app/order.created", "data": {"order_id": i}}, runtime=runtime).run_ids[0]
        for i in range(200)
    ]
    drain(runtime)
    # When order 7 is approved
    publish({"name": "app/order.approved", "data": {"order_id": 7}}, runtime=runtime)
    drain(runtime)
    # Then only its run resumed, and the index holds the 199 others in their own buckets
    assert got == [7]
    assert _status(runtime, runs[7]) == "completed"
    assert _status(runtime, runs[8]) == "waiting"
    paths = runtime.redis.hgetall(runtime.keys.waiter_paths("app/order.approved"))
    assert paths == {"data.order_id": "199"}


def test_a_timed_out_waiter_leaves_the_index(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given one run waiting for an approval
    got: list[Any] = []
    _register_approver(registry, runtime, got)
    publish({"name": "app/order.created", "data": {"order_id": 1}}, runtime=runtime)
    drain(runtime)
    # When its wait times out
    clock.advance(3601)
    drain(runtime)
    # Then it resumed with nothing, and no trace of it is left in the index
    assert got == [None]
    assert runtime.redis.keys(f"{runtime.keys.prefix}:wait*") == []


def test_a_run_waiting_since_before_the_index_still_wakes(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run parked the old way: in the event name's hash, with its match as JSON
    got: list[Any] = []
    _register_approver(registry, runtime, got)
    run_id = publish(
        {"name": "app/order.created", "data": {"order_id": 3}}, runtime=runtime
    ).run_ids[0]
    drain(runtime)
    old_waiter = json.dumps({"match": "data.order_id", "value": 3})
    for key in runtime.redis.keys(f"{runtime.keys.prefix}:wait*"):
        runtime.redis.delete(key)
    runtime.redis.hset(runtime.keys.waiters("app/order.approved"), run_id, old_waiter)
    runtime.redis.hset(runtime.keys.run(run_id), "wait_bucket", "")
    # When its event is published
    publish({"name": "app/order.approved", "data": {"order_id": 3}}, runtime=runtime)
    drain(runtime)
    # Then it resumed with the event
    assert got == [3]
