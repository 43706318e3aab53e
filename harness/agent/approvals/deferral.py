"""A request that still stands after the person wrote something else (steer mode).

The model got `PENDING_RESULT` for the call and the person's message, and answered them. The
turn then sends that answer, waits on for the request (`approvals.gate.settle`, until the
request's own deadline, as before), and tells the model how it ended, as a new message: the
call's result once approved, the refusal otherwise. A further message while it waits goes to
the model the same way, the request still standing.
"""

from __future__ import annotations

from harness.agent.approvals.gate import settle
from harness.agent.approvals.hook import ApprovalHook
from harness.llm.types import Message


def settle_deferred(approvals: ApprovalHook) -> list[Message]:
    """Wait for the requests the turn's approval hook holds; returns (and records in the
    session) the messages the model must see next: how each request ended, then what the
    person wrote meanwhile. Requests still standing stay in `approvals.deferred`. Suspends the
    run while it waits."""
    turn = approvals.turn
    ended: list[Message] = []
    standing = []
    for deferred in approvals.deferred:
        call = deferred.call
        gate = settle(
            turn.ctx,
            turn.deps.settings,
            call,
            deferred.approval_id,
            deferred.deadline_ms,
            turn.session_key,
            reply=turn.ask_in,
        )
        turn.arrived.extend(gate.arrived)
        if gate.pending is not None:
            standing.append(deferred)
        elif gate.refusal is not None:
            ended.append(Message.user(f"[approval of {call.name} call {call.id}] {gate.refusal}"))
        else:
            result = turn.act(call)
            outcome = "it failed" if result.is_error else "it ran"
            ended.append(
                Message.user(
                    f"[approval of {call.name} call {call.id}] Approved, and {outcome}. "
                    f"Result:\n{result.content}"
                )
            )
    approvals.deferred[:] = standing
    messages = [*ended, *turn.steer()]
    for message in messages:
        turn.record(message)
    return messages
