"""What a settled approval request says in the chat: the decision, who made it, and when.

Shared by the channels (a press that counted) and the gate (a typed yes or no, a timeout), so a
request reads the same however it was settled.
"""

from __future__ import annotations

from datetime import UTC, datetime

UNSHOWN_BY = "unattended: the request could not be shown"
"""Who decided a request the chat refused to show (`ask-approval` spent its retries, or the
platform said the chat is gone): nobody, so `AGENT_APPROVAL_UNATTENDED` did."""

OWNER_UNREACHABLE_BY = "unattended: the owner's channel is not configured"
"""Who decided a request asked of the owner whose channel this fleet cannot post on: nobody,
so it was denied (`harness.agent.approvals.owner_request`)."""

DECIDED = {"approve": "✅ Approved", "deny": "❌ Denied", "session": "✅ Allowed for this session"}


def decided(decision: str) -> str:
    """The short label of a decision (`approve` -> "✅ Approved"); unknown ones as they are."""
    return DECIDED.get(decision, decision)


def decision_line(decision: str, by: str, at_ms: int) -> str:
    """ "✅ Approved by Alice at 07:01 UTC": the line shown on the request once it counted."""
    return f"{decided(decision)} by {by} at {clock_time(at_ms)}"


def clock_time(at_ms: int) -> str:
    """A time of day in UTC ("07:01 UTC") from ms since the epoch."""
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%H:%M UTC")
