"""The seam that asks the owner and waits (`approvals.owner_request`), used by a durable
function that is not a tool call (as a budget raise will be): the request goes to the owner's
direct chat, only the owner's answer counts, and the timeout ends the wait."""

from __future__ import annotations

import json
from typing import Any

from harness.agent.approvals.owner_request import request_owner, wait_for_owner
from harness.events import APPROVAL_REQUESTED, ApprovalAnswered, ApprovalRequested
from harness.records.approvals import RedisApprovalStore
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from harness.settings import Settings
from tests.runtime_fixtures import ManualClock

OWNER = "telegram:user:7"
SETTINGS = Settings(  # type: ignore[call-arg]
    _env_file=None, agent_owner=OWNER, agent_approval_timeout="60s"
)


@function(id="raise-budget", trigger=event("test/raise.budget"))
def raise_budget(ctx: Context) -> dict[str, Any]:
    """Ask the owner to raise today's budget; return what the record says they answered."""
    asked = request_owner(
        ctx, SETTINGS, title="budget", summary="Raise today's budget to $5?", session_key=None
    )
    if asked is None:
        return {"state": "no owner"}
    claim = wait_for_owner(ctx, asked)
    return {"state": claim.state, "by": claim.by, "outcome": claim.outcome}


def _start(runtime: Runtime, registry: FunctionRegistry) -> tuple[str, ApprovalRequested]:
    registry.register(raise_budget)
    runtime.register_functions()
    (run_id,) = publish({"name": "test/raise.budget", "data": {}}, runtime=runtime).run_ids
    drain(runtime)
    (raw,) = [
        json.loads(fields["event"])["data"]
        for _id, fields in runtime.redis.xrange(runtime.keys.events)
        if fields["name"] == APPROVAL_REQUESTED
    ]
    return run_id, ApprovalRequested.model_validate(raw)


def _result(runtime: Runtime, run_id: str) -> Any:
    run = runtime.ledger.run(run_id)
    assert run is not None and run.status == "completed", run
    return run.result


def test_owner_request_goes_to_the_owners_chat_and_their_answer_ends_the_wait(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a function that asks the owner (AGENT_OWNER=telegram:user:7)
    run_id, request = _start(runtime, registry)
    # Then the request is addressed to the owner's direct chat, the owner its only approver
    assert (request.reply.channel, request.reply.destination.chat_id) == ("telegram", "7")
    assert request.approvers == [OWNER] and request.owner == OWNER
    store = RedisApprovalStore(runtime)
    # When someone else answers, Then it does not count
    assert store.decide(request.approval_id, "approve", "telegram:user:8", "Eve").outcome == (
        "forbidden"
    )
    # When the owner approves (the channel publishes the answered event)
    claim = store.decide(request.approval_id, "approve", OWNER, "Alice")
    answered = ApprovalAnswered(
        approval_id=request.approval_id, decision="approve", by=claim.by, at=claim.at
    )
    publish(answered.to_event(), runtime=runtime)
    drain(runtime)
    # Then the function gets the owner's answer
    assert _result(runtime, run_id) == {"state": "approve", "by": "Alice", "outcome": "answered"}


def test_owner_request_unanswered_expires_at_the_approval_timeout(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a function waiting for the owner, with a 60 s approval timeout
    run_id, _request = _start(runtime, registry)
    # When the timeout passes unanswered
    clock.advance(61)
    drain(runtime)
    # Then the wait ends with the request expired
    assert _result(runtime, run_id)["state"] == "expired"
