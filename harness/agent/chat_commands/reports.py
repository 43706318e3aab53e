"""The texts `/status`, `/usage` and `/pair` answer with, from plain data: the usage rows
(`harness.records.usage`, priced by `harness.observe.usage_report`), the chat's live runs and
the pairing store. Pure functions, so each answer is tested without a fleet."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from harness.observe.usage_report import UsageTotal, totals
from harness.records.pairing import Grant, PairingRequest
from harness.records.usage import UsageRow
from harness.runtime.ledger import RunRecord

USAGE_DAYS = 7


@dataclass(frozen=True)
class ChatState:
    """What `/status` reports: who answers (`answerer`: an agent or a network) on which
    model, the conversation's size, and the chat's live runs besides the command's."""

    answerer: str
    model: str
    messages: int
    tokens: int
    running: Sequence[RunRecord]


def status_text(state: ChatState, rows: Sequence[UsageRow], session_key: str, today: date) -> str:
    """`/status`: model, conversation size, today's spend in this chat, running tasks."""
    spent = _total(rows, today, today, session_key)
    lines = [
        f"Agent: {state.answerer} (model {state.model})",
        f"Conversation: {state.messages} messages, about {state.tokens:,} tokens",
        f"Today in this chat: {_spend(spent)}",
    ]
    if not state.running:
        lines.append("Running: nothing")
    else:
        lines.append(f"Running ({len(state.running)}):")
        lines += [f"- {r.function_id} {r.id} ({r.status})" for r in state.running]
    return "\n".join(lines)


def usage_text(
    rows: Sequence[UsageRow], session_key: str, today: date, *, fleet: bool = False
) -> str:
    """`/usage`: this chat's tokens and cost today and over the last `USAGE_DAYS` days; with
    `fleet` (the owner asks) the whole fleet's too."""
    week = today - timedelta(days=USAGE_DAYS - 1)
    lines = [
        f"This chat today: {_spend(_total(rows, today, today, session_key))}",
        f"This chat, last {USAGE_DAYS} days: {_spend(_total(rows, week, today, session_key))}",
    ]
    if fleet:
        lines += [
            f"All chats today: {_spend(_total(rows, today, today, None))}",
            f"All chats, last {USAGE_DAYS} days: {_spend(_total(rows, week, today, None))}",
        ]
    return "\n".join(lines)


def pair_text(pending: Sequence[PairingRequest], approved: Sequence[Grant]) -> str:
    """`/pair` for the owner: pending codes (to approve with `harness pairing approve`) and
    the approved subjects."""
    lines = ["Pending pairing codes:" if pending else "No pending pairing codes."]
    lines += [f"- {p.code}: {p.label or p.subject} ({p.channel})" for p in pending]
    lines.append("Approved:" if approved else "Nobody is approved yet.")
    lines += [f"- {g.subject} ({g.label})" if g.label else f"- {g.subject}" for g in approved]
    if pending:
        lines.append("Approve one with `harness pairing approve <code>`.")
    return "\n".join(lines)


def _total(rows: Sequence[UsageRow], first: date, last: date, session: str | None) -> UsageTotal:
    """The rows of days `first`..`last` (of `session` when given) summed into one total."""
    days = {(first + timedelta(days=n)).isoformat() for n in range((last - first).days + 1)}
    picked = [r for r in rows if r.day in days and (session is None or r.session == session)]
    found = totals([r.model_copy(update={"day": "all"}) for r in picked], "day")
    return found[0] if found else UsageTotal(group="all")


def _spend(total: UsageTotal) -> str:
    tokens = total.input_tokens + total.output_tokens + total.cache_read_tokens
    tokens += total.cache_write_tokens
    cost = "cost unknown" if total.cost_usd is None else f"${total.cost_usd:.4f}"
    return f"{tokens:,} tokens, {cost} ({total.calls} model calls)"
