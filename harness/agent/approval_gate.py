"""Asking before a risky tool call runs: durable, first answer wins, never holds a worker.

`ask_first` is called by the turn's `act` before a tool step. When the policy
(`approval_policy`) wants a yes, it records a pending request (`ApprovalStore`), publishes
`agent.approval.requested` (a channel renders it with buttons) and suspends the run on
`agent.approval.answered` for this request, up to `AGENT_APPROVAL_TIMEOUT`. Every decision is
a step, so a replay after a crash or a restart sees what the first execution saw.

A run is attended when its reply goes somewhere that says it can answer
(`channel_meta["approvals"]` is true: the chat channels and `harness chat` set it); other runs
(a `system` session, a sub-agent, `harness send`) follow `AGENT_APPROVAL_UNATTENDED`.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict
from datetime import UTC, datetime

from harness.access import asker_of
from harness.agent.approval_policy import ApprovalPolicy, summarize_call
from harness.events import (
    APPROVAL_ANSWERED,
    APPROVAL_CLOSED,
    APPROVAL_REQUESTED,
    ApprovalAnswered,
    ApprovalClosed,
    ApprovalRequested,
    Event,
    ReplyTarget,
)
from harness.llm.types import ToolCall
from harness.runtime.approval_store import ApprovalStore, Claim, Others
from harness.runtime.steps import Context
from harness.settings import Settings

CAN_ANSWER_META = "approvals"
"""`channel_meta` key a channel sets to true when a person can answer requests there."""

UNATTENDED_REFUSAL = (
    "Not run: this tool call needs a person's approval, and nobody can be asked in this run "
    "(AGENT_APPROVAL_UNATTENDED=deny). Tell the user what you wanted to do so they can do it "
    "or allow it."
)


def ask_first(
    ctx: Context,
    settings: Settings,
    call: ToolCall,
    *,
    session_key: str | None,
    reply: ReplyTarget | None,
    risky: bool = False,
) -> str | None:
    """None when `call` may run (no approval needed, or approved); otherwise the refusal to
    give the model as the tool's result (denied, timed out, or nobody to ask), with the
    reason. `risky` is the tool's own declaration (`Tool.risky`). Suspends the run while it
    waits (raises `Suspended`)."""
    policy = ApprovalPolicy.from_settings(settings.agent_approval, settings.agent_approval_allow)
    store = ApprovalStore(ctx.runtime)

    if not policy.needs_approval(call.name, call.arguments, risky=risky):
        return None  # grants only ever relax the policy: no need to read them (or record it)

    def check() -> bool:
        granted = store.grants(session_key) if session_key else []
        return policy.needs_approval(call.name, call.arguments, granted, risky=risky)

    if not ctx.step.run("approval-check", check):
        return None
    if reply is None or not reply.channel_meta.get(CAN_ANSWER_META):
        return None if settings.agent_approval_unattended == "allow" else UNATTENDED_REFUSAL
    approvers = approvers_of(reply)
    others: Others = (
        "allowed"
        if in_group(reply) and settings.agent_approval_group_answer == "allowed"
        else "none"
    )

    def open_request() -> str:
        approval_id = uuid.uuid4().hex
        store.open(approval_id, approvers, session_key, ctx.run_id, others)
        return approval_id

    approval_id = ctx.step.run("approval-open", open_request)
    request = ApprovalRequested(
        approval_id=approval_id,
        run_id=ctx.run_id,
        tool=call.name,
        summary=summarize_call(call.name, call.arguments),
        reply=reply,
        approvers=approvers,
        timeout=settings.agent_approval_timeout,
    )
    ctx.step.send_event(
        "approval-ask",
        Event(name=APPROVAL_REQUESTED, id=f"approval-ask-{approval_id}", data=request.model_dump()),
    )
    event = ctx.step.wait_for_event(
        "approval",
        event=APPROVAL_ANSWERED,
        match="data.approval_id",
        equals=approval_id,
        timeout=settings.agent_approval_timeout,
    )
    decision: str
    if event is not None:
        answer = ApprovalAnswered.from_event(event)
        decision, by, at = answer.decision, answer.by, answer.at
    else:
        claim = Claim(**ctx.step.run("approval-expire", lambda: asdict(store.expire(approval_id))))
        if claim.outcome == "recorded" or claim.state == "expired":
            closed = ApprovalClosed(
                approval_id=approval_id,
                reason=f"⌛ Expired: nobody answered within {settings.agent_approval_timeout}.",
            )
            ctx.step.send_event(
                "approval-closed",
                Event(
                    name=APPROVAL_CLOSED,
                    id=f"approval-closed-{approval_id}",
                    data=closed.model_dump(),
                ),
            )
            return (
                f"Not run: nobody approved this {call.name} call within "
                f"{settings.agent_approval_timeout}, so it was refused. Tell the user, and ask "
                "again only if they want it."
            )
        decision, by, at = claim.state, claim.by, claim.at
    if decision == "deny":
        return (
            f"Not run: {by} denied this {call.name} call at {_when(at)}. Do not try it another "
            "way; tell the user and ask what they want instead."
        )
    if decision == "session" and session_key:
        ctx.step.run("approval-grant", store.grant, session_key, call.name)
    return None


def approvers_of(reply: ReplyTarget) -> list[str]:
    """Who may answer a request in this chat: the person who sent the message (its user
    subjects), or anyone able to reach it (empty) for the owner's own entry points."""
    asker = asker_of(reply.channel_meta)
    if asker is None:
        return []
    return [s for s in asker.subjects if ":user:" in s] or list(asker.subjects)


def in_group(reply: ReplyTarget) -> bool:
    """True when the request's chat is a group (what a pairing code approves there is the
    chat, not the person)."""
    asker = asker_of(reply.channel_meta)
    return asker is not None and ":chat:" in asker.pairing_subject


def _when(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
