"""The event: a name, a JSON object of data, an id and a timestamp; the names of the built-in
events; and `EventData`, the base of their typed data."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any, ClassVar, Final, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.errors import InvalidEventDataError

MESSAGE_RECEIVED: Final = "agent.message.received"
REPLY_READY: Final = "agent.reply.ready"
FILE_READY: Final = "agent.file.ready"
FUNCTION_FAILED: Final = "function.failed"
FUNCTION_CANCELLED: Final = "function.cancelled"
SUBAGENT_SPAWN: Final = "agent.subagent.spawn"
CRON_TICK: Final = "harness/cron"
APPROVAL_REQUESTED: Final = "agent.approval.requested"
APPROVAL_GIVEN: Final = "agent.approval.given"
APPROVAL_ANSWERED: Final = "agent.approval.answered"
APPROVAL_CLOSED: Final = "agent.approval.closed"

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


def problems(exc: ValidationError, whole: str, skip: int = 0) -> str:
    """Every error of `exc` as `field.path: message`, the first `skip` parts of each path
    left out (a union's tag and `data` when the envelope was validated)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc'][skip:]) or whole}: {err['msg']}"
        for err in exc.errors()
    )


class EventData(BaseModel):
    """Base of the data models of built-in events. Each model knows its event's name
    (`event_name`), so an event is made from its data in one way (`to_event`) and read back
    in one way (`from_event`)."""

    event_name: ClassVar[str]

    def to_event(self, id: str | None = None, ts: int | None = None) -> Event:
        """The event `event_name` carrying this data as JSON. Without `id` the event gets a
        fresh one (`send_event` replaces it with one derived from the run and step)."""
        fields: dict[str, Any] = {"name": self.event_name, "data": self.model_dump(mode="json")}
        if id is not None:
            fields["id"] = id
        if ts is not None:
            fields["ts"] = ts
        return Event(**fields)

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
                f"{problems(exc, 'data')}"
            ) from exc


D = TypeVar("D", bound=EventData)
