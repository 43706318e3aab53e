"""Approval requests on the chat platforms, and the answers to them.

    agent.approval.requested -> ask-approval     post the request with buttons on its channel;
                                                 when it cannot be posted, answer it for nobody
                                                 (`AGENT_APPROVAL_UNATTENDED`) so the run does
                                                 not wait for a button no one sees; a
                                                 request for the owner on a channel that is
                                                 not configured is denied at once
                                                 (`OWNER_UNREACHABLE_BY`)
    agent.approval.given     -> answer-approval  check the press against the request's record
                                                 (first answer wins, only its approvers or the
                                                 console's override), then publish
                                                 `agent.approval.answered` and show the
                                                 outcome to whoever pressed (a console answer:
                                                 on the request's own message)
    agent.approval.closed    -> close-approval   rewrite the request to say it expired or was
                                                 cancelled, removing its buttons
    function.cancelled       -> cancel-approval  a chat turn cancelled while it waited (cancel
       (of the chat turn)                        mode): close its pending request

Channels that can show buttons implement `ApprovingChannel`. An answer given through the
owner's own entry points (`harness chat`, `/api/chat`) arrives as `agent.approval.given` on a
channel that is not registered: it is checked and published the same way, with nothing to
show on a platform.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from channels.base import Inbound
from channels.registry import channel_or_none
from harness.agent.approvals.lines import (
    OWNER_UNREACHABLE_BY,
    UNSHOWN_BY,
    decided,
    decision_line,
)
from harness.errors import StepFailedError
from harness.events import (
    APPROVAL_CLOSED,
    APPROVAL_GIVEN,
    APPROVAL_REQUESTED,
    FUNCTION_CANCELLED,
    MESSAGE_HANDLER,
    OPERATOR_CHANNEL,
    ApprovalAnswered,
    ApprovalClosed,
    ApprovalGiven,
    ApprovalRequested,
    Destination,
    FunctionCancelled,
)
from harness.records.approvals import Claim
from harness.records.stores import redis_records
from harness.runtime import Context, event, function

ASK_APPROVAL = "ask-approval"
ANSWER_APPROVAL = "answer-approval"
CLOSE_APPROVAL = "close-approval"
CANCEL_APPROVAL = "cancel-approval"
CANCELLED_LINE = "🚫 Cancelled: a newer message took over, so nothing was run."
NOT_YET_WAITING = frozenset({"queued", "pending", "running", "steered"})
WAIT_CHECKS = 10


@runtime_checkable
class ApprovingChannel(Protocol):
    """A channel that can ask a person to approve a tool call."""

    def ask_approval(self, request: ApprovalRequested) -> str:
        """Post the request with Approve / Deny / Allow-for-this-session buttons; return the
        platform's message id. Raises a `PlatformError`."""
        ...

    def request_text(self, request: ApprovalRequested) -> str:
        """The text `ask_approval` posts for `request` (to rewrite it later)."""
        ...

    def settle_approval(
        self,
        destination: Destination,
        channel_meta: Mapping[str, Any],
        notice: str,
        outcome: str | None,
    ) -> None:
        """Tell the person who pressed `notice` (for them alone where the platform can); with
        `outcome`, also rewrite the request message to show it and remove its buttons. Best
        effort: never raises."""
        ...


@runtime_checkable
class InteractiveChannel(Protocol):
    """A channel whose button presses come to their own route
    (`POST /webhooks/{channel}/interactions`), verified with the channel's `verify`."""

    def transform_interaction(self, body: bytes, headers: Mapping[str, str]) -> Inbound:
        """Turn a verified interactivity request body into what to do with it. Never raises
        for payloads the platform may send: anything not understood is `Ignored`."""
        ...


@function(id=ASK_APPROVAL, trigger=event(APPROVAL_REQUESTED), retries=3)
def ask_approval(ctx: Context) -> dict[str, Any]:
    """Post an approval request on its chat, once. A channel without buttons posts nothing
    (its client shows the request from the events stream). When the post fails for good
    (retries spent, or a permanent error: the chat is gone, the bot was removed), the request
    is answered at once as unattended (`answer_unshown`) instead of waiting out its timeout.
    A request asked of the owner (`owner`) on a channel without buttons here (not configured,
    or unknown) is denied at once: only the owner could answer it."""
    request = ApprovalRequested.from_event(ctx.event)
    channel = channel_or_none(request.reply.channel)
    if not isinstance(channel, ApprovingChannel):
        if request.owner:
            unreachable = f"the owner's channel {request.reply.channel!r} is not configured"
            return answer_unshown(ctx, request, unreachable, by=OWNER_UNREACHABLE_BY)
        return {"posted": None}
    try:
        posted = ctx.step.run("post", channel.ask_approval, request)
    except StepFailedError as exc:
        return answer_unshown(ctx, request, exc.error)
    store = redis_records(ctx.runtime).approvals
    ctx.step.run("note", store.posted, request.approval_id, posted, request.model_dump_json())
    return {"posted": posted}


def answer_unshown(
    ctx: Context, request: ApprovalRequested, error: str, *, by: str = UNSHOWN_BY
) -> dict[str, Any]:
    """Answer a request that could not be shown with its `unattended` decision, by `by`
    (`UNSHOWN_BY` unless told), through the request's record (first answer wins: a press or
    the timeout that came first stands) and the same `agent.approval.answered` event a press
    publishes. Waits (durably) until the asking run is in its wait first, since a run does not
    see an event published before it waits."""
    decision: Literal["approve", "deny"] = "approve" if request.unattended == "allow" else "deny"
    store = redis_records(ctx.runtime).approvals
    claim = Claim(
        **ctx.step.run(
            "unshown",
            lambda: vars(store.decide_unattended(request.approval_id, decision, by)),
        )
    )
    if claim.outcome == "recorded":
        _until_waiting(ctx, request.run_id)
        _publish_answer(ctx, request.approval_id, decision, claim)
    return {"posted": None, "unshown": error, "outcome": claim.outcome, "decision": claim.state}


def _publish_answer(
    ctx: Context, approval_id: str, decision: Literal["approve", "deny", "session"], claim: Claim
) -> None:
    """Publish, once per run, the `agent.approval.answered` event the asking run waits on, for
    an answer its record just took (`claim`)."""
    answer = ApprovalAnswered(approval_id=approval_id, decision=decision, by=claim.by, at=claim.at)
    ctx.step.send_event("answered", answer.to_event())


def _until_waiting(ctx: Context, run_id: str) -> None:
    """Return once run `run_id` is no longer about to wait (waiting, or ended), checking a
    few times a second apart; after that, go on anyway (the run then finds the answer in the
    record when its wait times out)."""

    def status() -> str:
        run = ctx.runtime.ledger.run(run_id)
        return "" if run is None else run.status

    for check in range(WAIT_CHECKS):
        if ctx.step.run(f"run-status-{check}", status) not in NOT_YET_WAITING:
            return
        ctx.step.sleep(f"until-waiting-{check}", 1)


@function(id=ANSWER_APPROVAL, trigger=event(APPROVAL_GIVEN), retries=3)
def answer_approval(ctx: Context) -> dict[str, Any]:
    """Count a press if it is the first by a person allowed to answer, publishing
    `agent.approval.answered` (once: only the answer that took the record publishes); tell
    the presser either way."""
    given = ApprovalGiven.from_event(ctx.event)
    store = redis_records(ctx.runtime).approvals
    raw = ctx.step.run("decide", lambda: vars(store.answer(given)))
    claim = Claim(**raw)
    if claim.outcome == "recorded":
        _publish_answer(ctx, given.approval_id, given.decision, claim)
    notice, outcome = describe(claim, given.decision)
    if claim.outcome == "recorded" and given.channel == OPERATOR_CHANNEL and outcome:
        _rewrite_posted(ctx, given.approval_id, outcome)  # the console answered: show it there
    channel = channel_or_none(given.channel)
    if isinstance(channel, ApprovingChannel):
        ctx.step.run(
            "settle",
            channel.settle_approval,
            given.destination,
            given.channel_meta.platform,
            notice,
            outcome,
        )
    return {"outcome": claim.outcome, "decision": claim.state, "by": claim.by}


@function(id=CLOSE_APPROVAL, trigger=event(APPROVAL_CLOSED), retries=3)
def close_approval(ctx: Context) -> dict[str, Any]:
    """Rewrite a request that ended unanswered to show why, without its buttons (best effort:
    nothing when it was never posted, or its channel cannot show buttons)."""
    closed = ApprovalClosed.from_event(ctx.event)
    return {"closed": _rewrite_posted(ctx, closed.approval_id, closed.reason)}


def _rewrite_posted(ctx: Context, approval_id: str, outcome: str) -> str | None:
    """Rewrite the chat message that shows request `approval_id` to say `outcome`, without its
    buttons; returns its message id, or None when it was never posted or its channel cannot
    show buttons (best effort)."""
    where = ctx.step.run("where", redis_records(ctx.runtime).approvals.where_posted, approval_id)
    if where is None:
        return None
    message_id, raw = where
    request = ApprovalRequested.model_validate_json(raw)
    channel = channel_or_none(request.reply.channel)
    if not isinstance(channel, ApprovingChannel):
        return None
    destination = request.reply.destination.model_copy(update={"message_id": message_id})
    meta = {"request_text": channel.request_text(request)}
    ctx.step.run("settle-posted", channel.settle_approval, destination, meta, "", outcome)
    return message_id


@function(
    id=CANCEL_APPROVAL,
    trigger=event(FUNCTION_CANCELLED, if_=f"event.data.function_id == '{MESSAGE_HANDLER}'"),
    retries=3,
)
def cancel_approval(ctx: Context) -> dict[str, Any]:
    """A chat turn was cancelled (cancel mode, or `harness runs cancel`): expire the request
    it waited on, if any was still pending, and have it shown as cancelled."""
    cancelled = FunctionCancelled.from_event(ctx.event)
    store = redis_records(ctx.runtime).approvals
    approval_id = ctx.step.run("find", store.of_run, cancelled.run_id)
    if approval_id is None:
        return {"closed": None}
    claim = Claim(**ctx.step.run("expire", lambda: vars(store.expire(approval_id))))
    if claim.outcome != "recorded" and claim.state != "expired":
        return {"closed": None}  # answered before the cancel: the request shows that answer
    closed = ApprovalClosed(approval_id=approval_id, reason=CANCELLED_LINE)
    ctx.step.send_event(
        "closed",
        closed.to_event(id=f"approval-closed-{approval_id}"),
    )
    return {"closed": approval_id}


def describe(claim: Claim, decision: str) -> tuple[str, str | None]:
    """What to tell the person who pressed, and (when their press counted) the decision line
    to show on the request."""
    if claim.outcome == "recorded":
        return decided(decision), decision_line(decision, claim.by, claim.at)
    if claim.outcome == "answered":
        return f"Already answered: {decided(claim.state)} by {claim.by}.", None
    if claim.outcome == "expired":
        return "This request has expired; nothing was changed.", None
    if claim.outcome == "forbidden":
        return "Only the person who asked (or, where configured, an allowed user) may answer.", None
    return "This request is unknown or no longer pending; nothing was changed.", None
