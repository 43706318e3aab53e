"""Asking before a risky tool call runs: durable, first answer wins, never holds a worker.

`ask_first` is called by the approval hook (`approvals.hook`) before a tool step. When the policy
(`approvals.policy`) wants a yes, it records a pending request (`ApprovalStore`), publishes
`agent.approval.requested` (a channel renders it with buttons) and suspends the run on
`agent.approval.answered` for this request, up to `AGENT_APPROVAL_TIMEOUT`. Every decision is
a step, so a replay after a crash or a restart sees what the first execution saw.

A run is attended when its reply goes somewhere that says it can answer
(`channel_meta.can_answer` is true: the chat channels and `harness chat` set it) and its
session is not a `system` one; other runs (a `system` session whatever its message says, as
a function or cron started it; a sub-agent with no chat; `harness send`) follow
`AGENT_APPROVAL_UNATTENDED`: `ask` (the default) sends the request to the owner's direct chat
(`approvals.owner_request`) and waits for it the same way, only the owner answering; `deny`
and `allow` decide at once. A sub-agent started by a chat turn asks in its parent's chat
(`ask_in`): the person is there. An attended run whose request the chat refused to show is
answered at once for nobody (`UNSHOWN_BY`, denied unless `allow`) by `ask-approval`, through
the same first-answer-wins record and answered event as a press.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from harness.agent.approvals.grants import grantee_of, people_of
from harness.agent.approvals.lines import OWNER_UNREACHABLE_BY, UNSHOWN_BY, decision_line
from harness.agent.approvals.owner_request import (
    NO_OWNER_REFUSAL,
    OWNER_UNREACHABLE_REFUSAL,
    request_owner,
)
from harness.agent.approvals.policy import DECISIONS, ApprovalPolicy, summarize_call
from harness.agent.approvals.text import decision_of, typed_answer
from harness.agent.untrusted import clean_source
from harness.events import (
    APPROVAL_ANSWERED,
    ApprovalAnswered,
    ApprovalClosed,
    ApprovalRequested,
    Event,
    MessageReceived,
    ReplyTarget,
    is_system_session,
)
from harness.llm.types import ToolCall
from harness.records.approvals import ApprovalStore, Claim, Others
from harness.records.stores import redis_records
from harness.runtime.durations import parse_duration
from harness.runtime.steps import Context
from harness.settings import Settings

UNATTENDED_REFUSAL = (
    "Not run: this tool call needs a person's approval, and nobody can be asked in this run "
    "(AGENT_APPROVAL_UNATTENDED=deny). Tell the user what you wanted to do so they can do it "
    "or allow it."
)

UNSHOWN_REFUSAL = (
    "Not run: this {tool} call needs a person's approval, and the request could not be shown "
    "in the chat (the platform refused it or could not be reached), so nobody can answer it "
    "(AGENT_APPROVAL_UNATTENDED={mode}). Tell the user what you wanted to do so they can do it "
    "or allow it."
)

TAINT = "taint"
"""What the `approval-check` step records when a call asks only because the turn is tainted
(older runs recorded True or False)."""

PENDING_RESULT = (
    "Not run yet: this call waits for the person's approval, and they wrote something else "
    "meanwhile (below). The request (with its buttons) still stands: answer what they wrote. "
    "If they approve it later, the call runs and you are told its result; do not call it again."
)


@dataclass(frozen=True)
class DeferredCall:
    """A tool call whose request still stands after the person wrote something else: the
    turn answers them, then waits on (`approvals.deferral`)."""

    call: ToolCall
    approval_id: str
    deadline_ms: int


@dataclass(frozen=True)
class Gate:
    """What `ask_first` decided. `refusal` is None when the call may run, else the text to give
    the model as its result. `pending` names a request that still stands after the person
    wrote something else (steer mode): the call has not run, and `settle` waits on for it,
    until `deadline_ms`. `arrived` are the messages taken from the run's inbox while waiting:
    the model must see them (the turn's `steer` hands them on)."""

    refusal: str | None = None
    pending: str | None = None
    deadline_ms: int = 0
    arrived: tuple[Event, ...] = ()


def ask_first(
    ctx: Context,
    settings: Settings,
    call: ToolCall,
    *,
    session_key: str | None,
    reply: ReplyTarget | None,
    risky: bool = False,
    tainted_by: str | None = None,
) -> Gate:
    """Whether `call` may run: at once (no approval needed), once approved, or not (denied,
    timed out, nobody to ask), with the reason. `risky` is the tool's own declaration
    (`Tool.risky`). `tainted_by` names the outside content the turn has read (None: none),
    which makes a risky call ask even when allowlisted or granted; the request then says so.
    Suspends the run while it waits (raises `Suspended`)."""
    policy = ApprovalPolicy.from_settings(settings.agent_approval, settings.agent_approval_allow)
    store = redis_records(ctx.runtime).approvals
    tainted = tainted_by is not None
    if not policy.needs_approval(call.name, call.arguments, risky=risky, tainted=tainted):
        return Gate()  # grants only ever relax the policy: no need to read them (or record it)

    def check() -> bool | str:
        granted = store.grants(session_key, people_of(reply)) if session_key else []
        if not policy.needs_approval(call.name, call.arguments, granted, risky=risky):
            # asks only because of the outside content, when the call is one it covers
            asks = policy.needs_approval(
                call.name, call.arguments, granted, risky=risky, tainted=tainted
            )
            return TAINT if asks else False
        return True

    decided = ctx.step.run("approval-check", check)
    if not decided:
        return Gate()
    summary = summarize_call(call.name, call.arguments) + (
        taint_note(tainted_by) if decided == TAINT and tainted_by else ""
    )
    if reply is None or not attended(reply, session_key):
        return _unattended(ctx, settings, call, summary, session_key, reply)
    approvers = approvers_of(reply)
    others: Others = (
        "allowed"
        if in_group(reply) and settings.agent_approval_group_answer == "allowed"
        else "none"
    )
    timeout_ms = int(parse_duration(settings.agent_approval_timeout) * 1000)

    def open_request() -> dict[str, Any]:
        approval_id = uuid.uuid4().hex
        store.open(approval_id, approvers, session_key, ctx.run_id, others)
        return {"id": approval_id, "deadline": ctx.runtime.now_ms() + timeout_ms}

    opened = ctx.step.run("approval-open", open_request)
    if isinstance(opened, str):  # journaled before requests had a deadline
        opened = {"id": opened, "deadline": ctx.runtime.now_ms() + timeout_ms}
    approval_id, deadline_ms = str(opened["id"]), int(opened["deadline"])
    request = ApprovalRequested(
        approval_id=approval_id,
        run_id=ctx.run_id,
        tool=call.name,
        summary=summary,
        reply=reply,
        approvers=approvers,
        timeout=settings.agent_approval_timeout,
        unattended="allow" if settings.agent_approval_unattended == "allow" else "deny",
    )
    ctx.step.send_event(
        "approval-ask",
        request.to_event(id=f"approval-ask-{approval_id}"),
    )
    return settle(ctx, settings, call, approval_id, deadline_ms, session_key, reply=reply)


def _unattended(
    ctx: Context,
    settings: Settings,
    call: ToolCall,
    summary: str,
    session_key: str | None,
    reply: ReplyTarget | None,
) -> Gate:
    """A call nobody in the run can answer: allowed or denied at once, or (`ask`) asked of
    the owner in their chat and waited for like any request (refused when no owner is known)."""
    mode = settings.agent_approval_unattended
    if mode != "ask":
        return Gate(refusal=None if mode == "allow" else UNATTENDED_REFUSAL)
    asked = request_owner(ctx, settings, title=call.name, summary=summary, session_key=session_key)
    if asked is None:
        return Gate(refusal=NO_OWNER_REFUSAL.format(tool=call.name))
    return settle(
        ctx, settings, call, asked.approval_id, asked.deadline_ms, session_key, reply=reply
    )


def attended(reply: ReplyTarget | None, session_key: str | None) -> bool:
    """True when a person can be asked in this run: its reply goes where someone can answer
    (`channel_meta.can_answer`) and its session is not a `system` one (started by a function
    or cron, whose message could claim anything)."""
    if reply is None or is_system_session(session_key) or is_system_session(reply.session_key):
        return False
    return reply.channel_meta.can_answer


def taint_note(source: str) -> str:
    """The line a request ends with when it asks only because of outside content."""
    return (
        f"\n\n⚠️ Asked because this turn read outside content: {clean_source(source)}. "
        "Its allowlist and session grants do not apply until that content leaves the context."
    )


def settle(
    ctx: Context,
    settings: Settings,
    call: ToolCall,
    approval_id: str,
    deadline_ms: int,
    session_key: str | None,
    *,
    reply: ReplyTarget | None,
) -> Gate:
    """Wait for the answer to request `approval_id` until `deadline_ms`. A message that
    arrives meanwhile (steer mode) ends the wait: a plain yes or no from someone who may
    answer answers it; anything else leaves the request standing (`Gate.pending`) so the model
    can see the message (in a run nobody can answer in, whose request is the owner's, typed
    words never answer it: only the owner's press does). Suspends the run while it waits.

    The decision, who gave it and when are read from the request's record, never from the
    `agent.approval.answered` event that woke the run: anything able to publish an event could
    forge one. An event whose request is still pending is ignored (the wait goes on). A
    "session" answer grants the tool to the person who gave it (`approvals.grants`), whose
    turns `reply` tells apart."""
    store = redis_records(ctx.runtime).approvals
    arrived: list[Event] = []
    while True:
        left_s = max(deadline_ms - ctx.runtime.now_ms(), 1) / 1000
        woken = ctx.step.wait_for_event_or_inbox(
            "approval",
            event=APPROVAL_ANSWERED,
            match="data.approval_id",
            equals=approval_id,
            timeout=left_s,
        )
        if woken.event is None and not woken.by_inbox:
            refusal = _expire(ctx, settings, call, approval_id, reply)
            return Gate(refusal=refusal, arrived=tuple(arrived))
        taken: list[Event] = []
        if woken.event is not None:  # None while the record is pending: a forged event
            claim = _recorded_answer(ctx, store, approval_id)
        else:
            taken = ctx.step.take_inbox("approval-inbox")
            arrived.extend(taken)
            # a run nobody can answer in asked the owner in their own chat: a "yes" in this
            # run's session (a function's message, whatever sender it names) is nobody's
            typed = attended(reply, session_key)
            claim = _typed_answer(ctx, store, approval_id, taken) if typed else None
        if claim is not None and claim.state in DECISIONS:
            refusal = _apply(ctx, settings, call, claim, session_key, reply)
            return Gate(refusal=refusal, arrived=tuple(arrived))
        if claim is not None and claim.state == "expired":
            refusal = _expire(ctx, settings, call, approval_id, reply)
            return Gate(refusal=refusal, arrived=tuple(arrived))
        if any(_says_something(MessageReceived.from_event(e)) for e in taken):
            return Gate(pending=approval_id, deadline_ms=deadline_ms, arrived=tuple(arrived))


def _recorded_answer(ctx: Context, store: ApprovalStore, approval_id: str) -> Claim | None:
    """The answer the request's record holds (decided or expired), or None while it is
    pending; read in a step, so a replay sees what the first execution saw."""
    raw = ctx.step.run("approval-record", lambda: _as_dict(store.settled(approval_id)))
    return None if raw is None else Claim(**raw)


def _as_dict(claim: Claim | None) -> dict[str, Any] | None:
    return None if claim is None else asdict(claim)


def _says_something(message: MessageReceived) -> bool:
    return bool(message.message.strip() or message.attachments)


def _typed_answer(
    ctx: Context, store: ApprovalStore, approval_id: str, taken: list[Event]
) -> Claim | None:
    """The first plain yes / no among `taken` as an answer to the request, with the same rules
    as a press; the claim, or None when there was none (or its writer may not answer)."""
    for message in (MessageReceived.from_event(e) for e in taken):
        decision = decision_of(message.message)
        if decision is None:
            continue
        given = typed_answer(message, decision, approval_id)
        claim = Claim(**ctx.step.run("approval-typed", lambda g=given: asdict(store.answer(g))))
        if claim.outcome == "forbidden":
            continue
        if claim.outcome == "recorded":
            answered = ApprovalAnswered(
                approval_id=approval_id, decision=given.decision, by=claim.by, at=claim.at
            )
            ctx.step.send_event("approval-answered", answered.to_event())
        if claim.state in DECISIONS:
            _close(ctx, approval_id, decision_line(claim.state, claim.by, claim.at))
        return claim
    return None


def _apply(
    ctx: Context,
    settings: Settings,
    call: ToolCall,
    claim: Claim,
    session_key: str | None,
    reply: ReplyTarget | None,
) -> str | None:
    """The refusal for a denial (None when approved), granting the tool in the session to
    the person who answered when that was the answer (`claim`, as the record holds it). A
    denial for nobody says why nobody could answer (`UNSHOWN_BY`, `OWNER_UNREACHABLE_BY`)."""
    if claim.state == "deny" and claim.by == UNSHOWN_BY:
        return UNSHOWN_REFUSAL.format(tool=call.name, mode=settings.agent_approval_unattended)
    if claim.state == "deny" and claim.by == OWNER_UNREACHABLE_BY:
        return OWNER_UNREACHABLE_REFUSAL.format(tool=call.name)
    if claim.state == "deny":
        return (
            f"Not run: {claim.by} denied this {call.name} call at {_when(claim.at)}. Do not try "
            "it another way; tell the user and ask what they want instead."
        )
    person = grantee_of(reply, claim)
    # an unattended run's request was the owner's: "Allow for this session" approves this
    # call only, never every later run of a scheduled job's session
    if claim.state == "session" and session_key and person and attended(reply, session_key):
        store = redis_records(ctx.runtime).approvals
        ctx.step.run("approval-grant", store.grant, session_key, person, call.name)
    return None


def _expire(
    ctx: Context, settings: Settings, call: ToolCall, approval_id: str, reply: ReplyTarget | None
) -> str | None:
    """Close the request as expired (and say so on it); if an answer beat the timeout, apply
    that answer instead."""
    store = redis_records(ctx.runtime).approvals
    claim = Claim(**ctx.step.run("approval-expire", lambda: asdict(store.expire(approval_id))))
    if claim.outcome == "recorded" or claim.state == "expired":
        timeout = settings.agent_approval_timeout
        _close(ctx, approval_id, f"⌛ Expired: nobody answered within {timeout}.")
        return (
            f"Not run: nobody approved this {call.name} call within {timeout}, so it was "
            "refused. Tell the user, and ask again only if they want it."
        )
    return _apply(ctx, settings, call, claim, None, reply)


def _close(ctx: Context, approval_id: str, line: str) -> None:
    """Have the request's message show `line` without its buttons (`close-approval`)."""
    closed = ApprovalClosed(approval_id=approval_id, reason=line)
    ctx.step.send_event(
        "approval-closed",
        closed.to_event(id=f"approval-closed-{approval_id}"),
    )


def approvers_of(reply: ReplyTarget) -> list[str]:
    """Who may answer a request in this chat: the person who sent the message (its user
    subjects), or anyone able to reach it (empty) for the owner's own entry points."""
    asker = reply.channel_meta.asker
    if asker is None:
        return []
    return [s for s in asker.subjects if ":user:" in s] or list(asker.subjects)


def in_group(reply: ReplyTarget) -> bool:
    """True when the request's chat is a group (what a pairing code approves there is the
    chat, not the person)."""
    asker = reply.channel_meta.asker
    return asker is not None and ":chat:" in asker.pairing_subject


def _when(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
