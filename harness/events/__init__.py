"""Events: what travels on the bus.

An event (`Event`) is a name, a JSON object of data, an id and a timestamp. Each built-in
event has a typed data model (`events/data.py`, an `EventData` that knows its `event_name`):
code makes the event from its data with `data.to_event(id=...)` and reads it back with
`Model.from_event(ctx.event)`, so a name and its model are paired in one place. Code that
receives any built-in event reads it through `read_builtin` (a pydantic discriminated union,
`BuiltinEvent`, tagged by the name). Built-in events are validated on publish; events with
any other name (users' own) keep a free-form `data` dict. On the wire `data` stays a JSON
object, in the shape it has always had.
"""

from __future__ import annotations

from harness.addresses import Destination, ReplyTarget, Sender
from harness.events.builtin import (
    BUILTIN_DATA,
    BUILTIN_EVENTS,
    BuiltinEvent,
    MessageReceivedEvent,
    parse_event,
    read_builtin,
    validate_event,
)
from harness.events.data import (
    OPERATOR_CHANNEL,
    OPERATOR_SUBJECT,
    ApprovalAnswered,
    ApprovalClosed,
    ApprovalGiven,
    ApprovalRequested,
    Attachment,
    CronTick,
    FileReady,
    FunctionCancelled,
    FunctionFailed,
    MessageReceived,
    NetworkRun,
    ReplyReady,
    SharedState,
    SubagentTask,
    TaskFinished,
)
from harness.events.event import (
    APPROVAL_ANSWERED,
    APPROVAL_CLOSED,
    APPROVAL_GIVEN,
    APPROVAL_REQUESTED,
    CRON_TICK,
    FILE_READY,
    FUNCTION_CANCELLED,
    FUNCTION_FAILED,
    MESSAGE_HANDLER,
    MESSAGE_RECEIVED,
    NETWORK_HANDLER,
    NETWORK_RUN,
    REPLY_READY,
    SUBAGENT_HANDLER,
    SUBAGENT_SPAWN,
    SYSTEM_CHANNEL,
    SYSTEM_SESSION_PREFIX,
    TASK_FINISHED,
    Event,
    EventData,
    is_system_session,
)

__all__ = [
    "APPROVAL_ANSWERED",
    "APPROVAL_CLOSED",
    "APPROVAL_GIVEN",
    "APPROVAL_REQUESTED",
    "BUILTIN_DATA",
    "BUILTIN_EVENTS",
    "CRON_TICK",
    "FILE_READY",
    "FUNCTION_CANCELLED",
    "FUNCTION_FAILED",
    "MESSAGE_HANDLER",
    "MESSAGE_RECEIVED",
    "NETWORK_HANDLER",
    "NETWORK_RUN",
    "OPERATOR_CHANNEL",
    "OPERATOR_SUBJECT",
    "REPLY_READY",
    "SUBAGENT_HANDLER",
    "SUBAGENT_SPAWN",
    "SYSTEM_CHANNEL",
    "SYSTEM_SESSION_PREFIX",
    "TASK_FINISHED",
    "ApprovalAnswered",
    "ApprovalClosed",
    "ApprovalGiven",
    "ApprovalRequested",
    "Attachment",
    "BuiltinEvent",
    "CronTick",
    "Destination",
    "Event",
    "EventData",
    "FileReady",
    "FunctionCancelled",
    "FunctionFailed",
    "MessageReceived",
    "MessageReceivedEvent",
    "NetworkRun",
    "ReplyReady",
    "ReplyTarget",
    "Sender",
    "SharedState",
    "SubagentTask",
    "TaskFinished",
    "is_system_session",
    "parse_event",
    "read_builtin",
    "validate_event",
]
