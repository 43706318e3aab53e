"""Events: what travels on the bus.

An event is a name, a JSON object of data, an id and a timestamp. Built-in event names
have typed data models (`EventData` subclasses, found by name in `BUILTIN_DATA`: the name is
the discriminator) and are validated on publish; any other name carries free-form data.
On the wire `data` stays a JSON object; a handler reads a built-in event's data through its
model (`MessageReceived.from_event(ctx.event)` or `ctx.event.typed(MessageReceived)`), never
as raw keys.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.errors import InvalidEventDataError, InvalidEventError
from harness.text import clean_text

MESSAGE_RECEIVED = "agent.message.received"
REPLY_READY = "agent.reply.ready"
FILE_READY = "agent.file.ready"
FUNCTION_FAILED = "function.failed"
FUNCTION_CANCELLED = "function.cancelled"
SUBAGENT_SPAWN = "agent.subagent.spawn"
CRON_TICK = "harness/cron"
APPROVAL_REQUESTED = "agent.approval.requested"
APPROVAL_GIVEN = "agent.approval.given"
APPROVAL_ANSWERED = "agent.approval.answered"
APPROVAL_CLOSED = "agent.approval.closed"

MESSAGE_HANDLER = "agent-handle-message"
"""The id of the function that answers `agent.message.received` (the agent's turn). Part of
the message contract, so that channels can follow the turn a message started
(`run_id_for(MESSAGE_HANDLER, message_event_id)`) without importing the agent."""

SYSTEM_SESSION_PREFIX = "system"
"""Sessions whose key starts with this are a function's or cron's own, not a person's: their
turns are unattended whatever the message says (nobody is there to answer a request)."""

SYSTEM_CHANNEL = "system"
"""The channel that delivers nowhere: a turn on it acts without answering anyone."""


def is_system_session(session_key: str | None) -> bool:
    """True for a session of a function's own (`SYSTEM_SESSION_PREFIX`)."""
    return bool(session_key) and str(session_key).startswith(SYSTEM_SESSION_PREFIX)


_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,199}$")


def _new_event_id() -> str:
    return uuid.uuid4().hex


def _now_ms() -> int:
    return int(time.time() * 1000)


class Event(BaseModel):
    """One event. `id` makes publishing idempotent; `ts` is milliseconds since the epoch."""

    model_config = ConfigDict(frozen=True)

    name: str
    data: dict[str, Any] = Field(default_factory=dict)
    id: str = Field(default_factory=_new_event_id, min_length=1, max_length=200)
    ts: int = Field(default_factory=_now_ms)

    @field_validator("name")
    @classmethod
    def _name_is_well_formed(cls, name: str) -> str:
        if not _NAME_PATTERN.match(name):
            raise ValueError(
                "event name must be 1-200 characters of letters, digits and _ . : / -, "
                f"starting with a letter or digit; got {name!r}"
            )
        return name

    def typed(self, model: type[D]) -> D:
        """This event's data as `model`; see `EventData.from_event`."""
        return model.from_event(self)


def _problems(exc: ValidationError, whole: str) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or whole}: {err['msg']}" for err in exc.errors()
    )


class EventData(BaseModel):
    """Base of the data models of built-in events."""

    @classmethod
    def from_event(cls, event: Event) -> Self:
        """The event's data as this model, for a handler that received the event.

        Raises `InvalidEventDataError` (non-retriable: the run fails at once) naming the event
        and every field at fault, rather than a pydantic traceback.
        """
        try:
            return cls.model_validate(event.data)
        except ValidationError as exc:
            raise InvalidEventDataError(
                f"event {event.name!r} ({event.id}) does not carry {cls.__name__} data: "
                f"{_problems(exc, 'data')}"
            ) from exc


D = TypeVar("D", bound=EventData)


class Sender(BaseModel):
    """Who wrote a message."""

    id: str
    name: str = ""
    username: str | None = None


class Destination(BaseModel):
    """Where a reply goes: a chat, optionally a message to answer and a thread or topic."""

    chat_id: str
    message_id: str | None = None
    thread_id: str | None = None


class ReplyTarget(BaseModel, frozen=True):
    """Where a user's answers go: what a sub-agent (or a notice) needs to reply by itself."""

    channel: str
    destination: Destination
    channel_meta: dict[str, Any] = Field(default_factory=dict)
    session_key: str | None = None


class Attachment(BaseModel):
    """A file that came with a message, as the platform describes it, before it is fetched.

    `kind` is what the person sent (photo, document, voice, audio, video, video_note,
    sticker, animation); `ref` is the platform's handle to fetch it by (a Telegram `file_id`,
    a Slack `url_private_download`); `name`, `mime_type` and `size` are the platform's claims,
    checked again when the file is downloaded.
    """

    kind: str
    ref: str
    name: str = ""
    mime_type: str = ""
    size: int | None = None


class MessageReceived(EventData):
    """Data of `agent.message.received`. `message` may be empty when `attachments` is not."""

    message: str
    session_key: str = Field(min_length=1, max_length=300)
    channel: str = Field(min_length=1)
    sender: Sender
    destination: Destination
    channel_meta: dict[str, Any] = Field(default_factory=dict)
    attachments: list[Attachment] = Field(default_factory=list)

    @field_validator("message")
    @classmethod
    def _encodable(cls, message: str) -> str:
        # whatever path it came by (webhook, polling, the HTTP API), a lone surrogate would
        # fail the turn at its first UTF-8 encode; replace it here, at the edge
        return clean_text(message)


class ReplyReady(EventData):
    """Data of `agent.reply.ready`."""

    response: str
    channel: str
    destination: Destination
    channel_meta: dict[str, Any] = Field(default_factory=dict)
    run_id: str


class FileReady(EventData):
    """Data of `agent.file.ready`: a workspace file the agent sends to a conversation.
    `path` is absolute, checked to lie inside the workspace when the event was made."""

    path: str
    name: str
    mime_type: str = "application/octet-stream"
    caption: str = ""
    channel: str
    destination: Destination
    channel_meta: dict[str, Any] = Field(default_factory=dict)


class FunctionFailed(EventData):
    """Data of `function.failed`: a run that spent its retries."""

    function_id: str
    run_id: str
    event: dict[str, Any]
    error: str


class FunctionCancelled(EventData):
    """Data of `function.cancelled`: a run stopped because a newer event superseded it."""

    function_id: str
    run_id: str
    event: dict[str, Any]
    reason: str = ""


class SubagentTask(EventData):
    """Data of `agent.subagent.spawn`, and the input of an invoked sub-agent: a task, when to
    start it (ISO 8601, optional) and where to send the answer (None: return it instead).
    `ask_in` is where to ask a person to approve a risky call when `reply` is None (the
    parent's chat)."""

    task: str = ""
    scheduled_for: str | None = None
    reply: ReplyTarget | None = None
    ask_in: ReplyTarget | None = None


class CronTick(EventData):
    """Data of `harness/cron`: one tick of a function's cron trigger, and the ticks it stands
    for when they were missed (`catch_up=True`), ISO 8601 in the trigger's time zone."""

    function_id: str
    tick: str
    missed: list[str] = Field(default_factory=list)


class ApprovalRequested(EventData):
    """Data of `agent.approval.requested`: a tool call waits for a person's yes. `summary` is
    what to show (the command, the path and the change); `approvers` the subjects that may
    answer (empty: anyone who can reach the request); `timeout` how long it waits;
    `unattended` the answer when the request cannot be shown (the asking run's
    `AGENT_APPROVAL_UNATTENDED`)."""

    approval_id: str = Field(min_length=1, max_length=64)
    run_id: str
    tool: str
    summary: str
    reply: ReplyTarget
    approvers: list[str] = Field(default_factory=list)
    timeout: str = "30m"
    unattended: Literal["deny", "allow"] = "deny"


class ApprovalGiven(EventData):
    """Data of `agent.approval.given`: a person pressed a button (not yet checked: the
    `approval-answer` function decides whether it counts). `subject` is who pressed, as the
    channel verified it (`telegram:user:7`); `channel_meta` what the channel needs to answer
    the click (callback id, the request's message). `allowlisted` is True when the channel's
    own allowlist (TELEGRAM_ALLOWED_CHATS, SLACK_ALLOWED_CHANNELS) names that person."""

    approval_id: str = Field(min_length=1, max_length=64)
    decision: Literal["approve", "deny", "session"]
    subject: str
    label: str = ""
    channel: str
    destination: Destination
    channel_meta: dict[str, Any] = Field(default_factory=dict)
    allowlisted: bool = False


class ApprovalAnswered(EventData):
    """Data of `agent.approval.answered`: the answer that counts, published once per request,
    to wake the run that waits for it. `at` is ms since the epoch."""

    approval_id: str = Field(min_length=1, max_length=64)
    decision: Literal["approve", "deny", "session"]
    by: str
    at: int

    def as_event(self) -> Event:
        """The `agent.approval.answered` event carrying this answer, without an id of its
        own: `send_event` gives it one from the publishing run and step (once per request,
        since only the answer that took the record publishes), which nothing else can take
        first. The waiting run reads the answer from the record, not from this event."""
        return Event(name=APPROVAL_ANSWERED, data=self.model_dump())


class ApprovalClosed(EventData):
    """Data of `agent.approval.closed`: a request ended without an answer (it expired, or its
    run was cancelled); `reason` is the line to show on the request in the chat."""

    approval_id: str = Field(min_length=1, max_length=64)
    reason: str


BUILTIN_DATA: dict[str, type[EventData]] = {
    MESSAGE_RECEIVED: MessageReceived,
    REPLY_READY: ReplyReady,
    FILE_READY: FileReady,
    FUNCTION_FAILED: FunctionFailed,
    FUNCTION_CANCELLED: FunctionCancelled,
    SUBAGENT_SPAWN: SubagentTask,
    CRON_TICK: CronTick,
    APPROVAL_REQUESTED: ApprovalRequested,
    APPROVAL_GIVEN: ApprovalGiven,
    APPROVAL_ANSWERED: ApprovalAnswered,
    APPROVAL_CLOSED: ApprovalClosed,
}


def validate_event(event: Event) -> Event:
    """Check a built-in event's data against its model; return the event with normalised data.

    Raises `InvalidEventError` naming the event and every field at fault. Events with other
    names pass through unchanged.
    """
    model = BUILTIN_DATA.get(event.name)
    if model is None:
        return event
    try:
        data = model.model_validate(event.data).model_dump(mode="json")
    except ValidationError as exc:
        problems = _problems(exc, "data")
        raise InvalidEventError(f"invalid data for event {event.name!r}: {problems}") from exc
    return event.model_copy(update={"data": data})


def parse_event(raw: Any) -> Event:
    """Build and validate an event from untrusted JSON-like input. Raises `InvalidEventError`."""
    try:
        event = Event.model_validate(raw)
    except ValidationError as exc:
        raise InvalidEventError(f"invalid event: {_problems(exc, 'event')}") from exc
    return validate_event(event)
