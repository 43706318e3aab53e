"""The names of the built-in events, and the envelope they travel in (`Event`, `EventData`,
from `harness.envelope`, where the engine's own events are declared)."""

from __future__ import annotations

from typing import Final

# the envelope and the engine's own event names, re-exported: `harness.events` is where the
# product's code reads every event name from
from harness.envelope import CRON_TICK as CRON_TICK
from harness.envelope import FUNCTION_CANCELLED as FUNCTION_CANCELLED
from harness.envelope import FUNCTION_FAILED as FUNCTION_FAILED
from harness.envelope import D as D
from harness.envelope import Event as Event
from harness.envelope import EventData as EventData
from harness.envelope import problems as problems

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
