"""Any built-in event, typed: a discriminated union over the built-in events (the name is
the tag), and the validation every published event goes through."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from harness.envelope import check_data, read_event
from harness.errors import InvalidEventError
from harness.events.data import (
    ApprovalAnswered,
    ApprovalClosed,
    ApprovalGiven,
    ApprovalRequested,
    CronTick,
    FileReady,
    FunctionCancelled,
    FunctionFailed,
    MessageReceived,
    NetworkRun,
    ReplyReady,
    SubagentTask,
    TaskFinished,
)
from harness.events.event import Event, EventData, problems


class _Envelope(BaseModel):
    """The parts of `Event` that every typed event shares."""

    model_config = ConfigDict(frozen=True)

    id: str
    ts: int


class MessageReceivedEvent(_Envelope):
    name: Literal["agent.message.received"]
    data: MessageReceived


class ReplyReadyEvent(_Envelope):
    name: Literal["agent.reply.ready"]
    data: ReplyReady


class FileReadyEvent(_Envelope):
    name: Literal["agent.file.ready"]
    data: FileReady


class FunctionFailedEvent(_Envelope):
    name: Literal["function.failed"]
    data: FunctionFailed


class FunctionCancelledEvent(_Envelope):
    name: Literal["function.cancelled"]
    data: FunctionCancelled


class SubagentSpawnEvent(_Envelope):
    name: Literal["agent.subagent.spawn"]
    data: SubagentTask


class TaskFinishedEvent(_Envelope):
    name: Literal["agent.task.finished"]
    data: TaskFinished


class CronTickEvent(_Envelope):
    name: Literal["harness/cron"]
    data: CronTick


class ApprovalRequestedEvent(_Envelope):
    name: Literal["agent.approval.requested"]
    data: ApprovalRequested


class ApprovalGivenEvent(_Envelope):
    name: Literal["agent.approval.given"]
    data: ApprovalGiven


class ApprovalAnsweredEvent(_Envelope):
    name: Literal["agent.approval.answered"]
    data: ApprovalAnswered


class ApprovalClosedEvent(_Envelope):
    name: Literal["agent.approval.closed"]
    data: ApprovalClosed


class NetworkRunEvent(_Envelope):
    name: Literal["agent.network.run"]
    data: NetworkRun


BuiltinEvent = Annotated[
    MessageReceivedEvent
    | ReplyReadyEvent
    | FileReadyEvent
    | FunctionFailedEvent
    | FunctionCancelledEvent
    | SubagentSpawnEvent
    | TaskFinishedEvent
    | CronTickEvent
    | ApprovalRequestedEvent
    | ApprovalGivenEvent
    | ApprovalAnsweredEvent
    | ApprovalClosedEvent
    | NetworkRunEvent,
    Field(discriminator="name"),
]
"""Any built-in event with its data typed, told apart by its name."""

BUILTIN_EVENTS: TypeAdapter[BuiltinEvent] = TypeAdapter(BuiltinEvent)

BUILTIN_DATA: dict[str, type[EventData]] = {
    model.event_name: model
    for model in (
        MessageReceived,
        ReplyReady,
        FileReady,
        FunctionFailed,
        FunctionCancelled,
        SubagentTask,
        TaskFinished,
        CronTick,
        ApprovalRequested,
        ApprovalGiven,
        ApprovalAnswered,
        ApprovalClosed,
        NetworkRun,
    )
}
"""The data model of each built-in event name."""


def read_builtin(event: Event) -> BuiltinEvent | None:
    """`event` with its data typed (match on the class, or on `name`), or None for an event
    that is not built in. Raises `InvalidEventError` naming every field at fault."""
    if event.name not in BUILTIN_DATA:
        return None
    try:
        return BUILTIN_EVENTS.validate_python(event.model_dump())
    except ValidationError as exc:
        found = problems(exc, "data", skip=2)
        raise InvalidEventError(f"invalid data for event {event.name!r}: {found}") from exc


def validate_event(event: Event) -> Event:
    """Check a built-in event's data against its model; return the event with normalised data.

    Raises `InvalidEventError` naming the event and every field at fault. Events with other
    names pass through unchanged.
    """
    # The data alone against its model (what `read_builtin` would check, without dumping the
    # envelope and matching it against the union): every webhook passes through here.
    return check_data(event, BUILTIN_DATA)


def parse_event(raw: Any) -> Event:
    """Build and validate an event from untrusted JSON-like input. Raises `InvalidEventError`."""
    return validate_event(read_event(raw))
