"""Asking the owner: a request sent to the owner's direct chat, answered by the owner alone.

A run nobody can answer in (a cron or function `system` turn, a sub-agent or network with no
chat, `harness send`) asks the owner when `AGENT_APPROVAL_UNATTENDED=ask` (the default):
`request_owner` finds the owner (`harness.owner.find_owner`: `AGENT_OWNER`, else whoever
paired first), opens the request's record with the owner's subject as its only approver,
and publishes `agent.approval.requested` addressed to the owner's direct chat, saying which
run it is for. The channel posts it with buttons (`channels.approvals.ask_approval`); a press
by anyone else is refused by the record (`forbidden`). `wait_for_owner` waits durably for the
answer (or the timeout), for callers with nothing to steer (a budget raise); the approval
gate waits with `approvals.gate.settle`, the same wait as in a chat.

No owner known: `request_owner` returns None (one log line), and the caller refuses with
`NO_OWNER_REFUSAL`. The owner's channel not configured in the fleet: `ask-approval` answers
the request at once as denied by `OWNER_UNREACHABLE_BY`, and the gate says so
(`OWNER_UNREACHABLE_REFUSAL`). Every decision is a step, so a replay sees what the first
execution saw.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from harness.events import (
    APPROVAL_ANSWERED,
    ApprovalRequested,
    Destination,
    ReplyTarget,
)
from harness.owner import Owner, find_owner
from harness.records.approvals import Claim
from harness.records.stores import redis_records
from harness.runtime.durations import parse_duration
from harness.runtime.steps import Context
from harness.settings import Settings

log = logging.getLogger(__name__)

NO_OWNER_REFUSAL = (
    "Not run: this {tool} call needs a person's approval, nobody can be asked in this run, and "
    "no owner is known to ask instead (AGENT_APPROVAL_UNATTENDED=ask). The operator should set "
    "AGENT_OWNER (or pair with the bot first). Tell the user what you wanted to do so they can "
    "do it or allow it."
)

OWNER_UNREACHABLE_REFUSAL = (
    "Not run: this {tool} call needs a person's approval, nobody can be asked in this run, and "
    "the owner's channel is not configured in this fleet, so the owner could not be asked "
    "(AGENT_APPROVAL_UNATTENDED=ask). The operator should set AGENT_OWNER to a person on a "
    "configured channel. Tell the user what you wanted to do so they can do it or allow it."
)


@dataclass(frozen=True)
class OwnerRequest:
    """A request open in the owner's chat: its id, when it times out (ms since the epoch), and
    the owner's subject (its only approver)."""

    approval_id: str
    deadline_ms: int
    owner: str


def owner_chat(owner: Owner) -> ReplyTarget:
    """Where the owner is asked: their direct chat with the bot on their channel."""
    return ReplyTarget(channel=owner.channel, destination=Destination(chat_id=owner.chat_id))


def request_owner(
    ctx: Context,
    settings: Settings,
    *,
    title: str,
    summary: str,
    session_key: str | None,
) -> OwnerRequest | None:
    """Open a request for `title` (a tool's name, or what is asked) showing `summary` and the
    run it is for, in the owner's direct chat; only the owner may answer it. Returns None when
    no owner is known (logged once, in the step). Times out after `AGENT_APPROVAL_TIMEOUT`.
    Steps: `owner-find`, `approval-open`, `approval-ask`."""
    records = redis_records(ctx.runtime)

    def find() -> dict[str, Any] | None:
        owner = find_owner(settings.agent_owner, records.pairing)
        if owner is None:
            log.warning(
                "run %s: %s needs the owner's approval and no owner is known; denied "
                "(set AGENT_OWNER or pair with the bot)",
                ctx.run_id,
                title,
            )
        return None if owner is None else asdict(owner)

    found = ctx.step.run("owner-find", find)
    if found is None:
        return None
    owner = Owner(**found)
    timeout_ms = int(parse_duration(settings.agent_approval_timeout) * 1000)

    def open_request() -> dict[str, Any]:
        approval_id = uuid.uuid4().hex
        # not the session's pending request: a typed "yes" there (`approval-by-text`) is
        # never the owner's, who is asked in their own chat
        records.approvals.open(approval_id, [owner.subject], None, ctx.run_id, "none")
        return {"id": approval_id, "deadline": ctx.runtime.now_ms() + timeout_ms}

    opened = ctx.step.run("approval-open", open_request)
    approval_id, deadline_ms = str(opened["id"]), int(opened["deadline"])
    request = ApprovalRequested(
        approval_id=approval_id,
        run_id=ctx.run_id,
        tool=title,
        summary=f"{summary}\n\n{asked_for(ctx, session_key)}",
        reply=owner_chat(owner),
        approvers=[owner.subject],
        timeout=settings.agent_approval_timeout,
        unattended="deny",  # not shown to the owner: nobody else may answer it
        owner=owner.subject,
    )
    ctx.step.send_event("approval-ask", request.to_event(id=f"approval-ask-{approval_id}"))
    return OwnerRequest(approval_id=approval_id, deadline_ms=deadline_ms, owner=owner.subject)


def asked_for(ctx: Context, session_key: str | None) -> str:
    """The line telling the owner which run asks: its function, its chat (session) and its
    run id."""
    where = f"chat {session_key}" if session_key else "no chat"
    return (
        f"Asked of you as the owner: nobody else can answer this run "
        f"(function {ctx.function_id}, {where}, run {ctx.run_id})."
    )


def wait_for_owner(ctx: Context, request: OwnerRequest) -> Claim:
    """Wait durably for the answer to `request` until its deadline: the claim the record
    holds (outcome `answered`, `state` the decision), or, once the deadline passed, the
    record's expiry (outcome `recorded`, or the answer that beat it). Reads the decision from
    the record, never from the event that woke the run (anything able to publish could forge
    one). Suspends the run while it waits; step ids start with `owner-`."""
    store = redis_records(ctx.runtime).approvals
    approval_id = request.approval_id
    while True:
        left_s = max(request.deadline_ms - ctx.runtime.now_ms(), 1) / 1000
        woken = ctx.step.wait_for_event(
            "owner-answer",
            event=APPROVAL_ANSWERED,
            match="data.approval_id",
            equals=approval_id,
            timeout=left_s,
        )
        if woken is None:
            expired = ctx.step.run("owner-expire", lambda: asdict(store.expire(approval_id)))
            return Claim(**expired)
        raw = ctx.step.run("owner-record", lambda: _settled(store.settled(approval_id)))
        if raw is not None:
            return Claim(**raw)


def _settled(claim: Claim | None) -> dict[str, Any] | None:
    return None if claim is None else asdict(claim)
