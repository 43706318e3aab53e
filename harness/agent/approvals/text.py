"""Answering an approval request by typing "yes" or "no" in the chat while a run waits.

A plain yes or no answers the session's pending request, as if the person who wrote it had
pressed the button: the same `agent.approval.given` goes to `answer-approval`, which applies
the same rules (only an approver, first answer wins). Only such messages start this function
(its trigger's predicate), so other messages cost nothing. In steer mode the waiting run sees
the message too (it ends its wait, see `approvals.gate`) and answers the request itself with
the same rules; whichever comes first counts, and both then agree on the decision. In cancel
mode the message cancels the waiting run instead, so this function answers nothing.
"""

from __future__ import annotations

from typing import Any

from harness.events import (
    MESSAGE_RECEIVED,
    ApprovalGiven,
    Destination,
    MessageReceived,
)
from harness.records.stores import redis_records
from harness.runtime import Context, event, function
from harness.settings import get_settings

APPROVAL_BY_TEXT = "approval-by-text"
ANSWER_WORDS = {
    "yes": "approve",
    "y": "approve",
    "ok": "approve",
    "approve": "approve",
    "approved": "approve",
    "no": "deny",
    "n": "deny",
    "nope": "deny",
    "deny": "deny",
    "denied": "deny",
}
_PREDICATE = "str(event.data.message).strip().lower().rstrip('.!') in " + repr(
    tuple(sorted(ANSWER_WORDS))
)


def decision_of(text: str) -> str | None:
    """`approve` or `deny` for a plain yes / no (any case, a trailing `.` or `!`), else None."""
    return ANSWER_WORDS.get(text.strip().lower().rstrip(".!"))


@function(id=APPROVAL_BY_TEXT, trigger=event(MESSAGE_RECEIVED, if_=_PREDICATE), retries=3)
def approval_by_text(ctx: Context) -> dict[str, Any]:
    """Answer the session's pending approval request with a typed yes or no; nothing when
    no request is pending. Returns the request answered (or None)."""
    if get_settings().on_new_message == "cancel":
        return {"answered": None}  # the new message cancels the waiting run, request and all
    data = MessageReceived.from_event(ctx.event)
    decision = decision_of(data.message)
    store = redis_records(ctx.runtime).approvals
    pending = ctx.step.run("pending", store.pending, data.session_key)
    if decision is None or pending is None:
        return {"answered": None}
    given = typed_answer(data, decision, pending)
    ctx.step.send_event("answer", given.to_event())
    return {"answered": pending}


def typed_answer(data: MessageReceived, decision: str, approval_id: str) -> ApprovalGiven:
    """A typed yes / no as the answer of its sender (their user subject, as the channel
    verified it) to request `approval_id`."""
    asker = data.channel_meta.asker
    users = [s for s in asker.subjects if ":user:" in s] if asker else []
    return ApprovalGiven(
        approval_id=approval_id,
        decision=decision,  # type: ignore[arg-type]
        subject=users[0] if users else f"{data.channel}:user:{data.sender.id}",
        label=data.sender.name or data.sender.id,
        channel=data.channel,
        destination=Destination(
            chat_id=data.destination.chat_id, thread_id=data.destination.thread_id
        ),
    )
