"""The names of the built-in events, and the envelope they travel in (`Event`, `EventData`,
from `harness.envelope`, where the engine's own events are declared)."""

from __future__ import annotations

from typing import Final

from harness.envelope import (
    CRON_TICK,
    FUNCTION_CANCELLED,
    FUNCTION_FAILED,
    D,
    Event,
    EventData,
    problems,
)

__all__ = [
    "APPROVAL_ANSWERED",
    "APPROVAL_CLOSED",
    "APPROVAL_GIVEN",
    "APPROVAL_REQUESTED",
    "CRON_TICK",
    "FILE_READY",
    "FUNCTION_CANCELLED",
    "FUNCTION_FAILED",
    "MESSAGE_HANDLER",
    "MESSAGE_RECEIVED",
    "NETWORK_HANDLER",
    "NETWORK_RUN",
    "REPLY_READY",
    "SUBAGENT_HANDLER",
    "SUBAGENT_SPAWN",
    "SYSTEM_CHANNEL",
    "SYSTEM_SESSION_PREFIX",
    "TASK_FINISHED",
    "D",
    "Event",
    "EventData",
    "is_system_session",
    "problems",
]

MESSAGE_RECEIVED: Final = "agent.message.received"
REPLY_READY: Final = "agent.reply.ready"
FILE_READY: Final = "agent.file.ready"
SUBAGENT_SPAWN: Final = "agent.subagent.spawn"
TASK_FINISHED: Final = "agent.task.finished"
APPROVAL_REQUESTED: Final = "agent.approval.requested"
APPROVAL_GIVEN: Final = "agent.approval.given"
APPROVAL_ANSWERED: Final = "agent.approval.answered"
APPROVAL_CLOSED: Final = "agent.approval.closed"
NETWORK_RUN: Final = "agent.network.run"

MESSAGE_HANDLER = "agent-handle-message"
"""The id of the function that answers `agent.message.received` (the agent's turn). Part of
the message contract, so that channels can follow the turn a message started
(`run_id_for(MESSAGE_HANDLER, message_event_id)`) without importing the agent."""

NETWORK_HANDLER = "agent-network"
"""The id of the function that runs a network (`agent.network.run`); `harness runs show` reads
the shared state from its "state" steps."""

SUBAGENT_HANDLER = "agent-sub-agent"
"""The id of the function that runs a sub-agent (`agent.subagent.spawn`, or invoked with a
`SubagentTask`): named here so a function's `run_agent` and the sidecar's invoke policy need
not import the agent."""

SYSTEM_SESSION_PREFIX = "system"
"""Sessions whose key starts with this are a function's or cron's own, not a person's: their
turns are unattended whatever the message says (nobody is there to answer a request)."""

SYSTEM_CHANNEL = "system"
"""The channel that delivers nowhere: a turn on it acts without answering anyone."""


def is_system_session(session_key: str | None) -> bool:
    """True for a session of a function's own (`SYSTEM_SESSION_PREFIX`)."""
    return bool(session_key) and str(session_key).startswith(SYSTEM_SESSION_PREFIX)
