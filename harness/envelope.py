"""The event as the engine knows it, and the events the engine emits itself.

An event (`Event`) is a name, a JSON object of data, an id and a timestamp; `EventData` is the
base of typed data that knows its event's name. The engine (`harness.runtime`) publishes three
events of its own: `harness/cron` (`CronTick`), `function.failed` (`FunctionFailed`) and
`function.cancelled` (`FunctionCancelled`). A leaf: it imports only pydantic and
`harness.errors`, so the engine and the product's events (`harness.events`, which re-exports
everything here) both build on it without the engine knowing the product's events.

What else a runtime checks on publish is its `check_event` (`harness.runtime.Runtime`):
`check_engine_event` by default, the product's `harness.events.validate_event` in a fleet.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.errors import InvalidEventDataError, InvalidEventError

FUNCTION_FAILED: Final = "function.failed"
FUNCTION_CANCELLED: Final = "function.cancelled"
CRON_TICK: Final = "harness/cron"

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


class FunctionFailed(EventData):
    """Data of `function.failed`: a run that spent its retries."""

    event_name: ClassVar[str] = FUNCTION_FAILED

    function_id: str
    run_id: str
    event: dict[str, Any]
    error: str


class FunctionCancelled(EventData):
    """Data of `function.cancelled`: a run stopped because a newer event superseded it."""

    event_name: ClassVar[str] = FUNCTION_CANCELLED

    function_id: str
    run_id: str
    event: dict[str, Any]
    reason: str = ""


class CronTick(EventData):
    """Data of `harness/cron`: one tick of a function's cron trigger, and the ticks it stands
    for when they were missed (`catch_up=True`), ISO 8601 in the trigger's time zone."""

    event_name: ClassVar[str] = CRON_TICK

    function_id: str
    tick: str
    missed: list[str] = Field(default_factory=list)


ENGINE_DATA: dict[str, type[EventData]] = {
    model.event_name: model for model in (FunctionFailed, FunctionCancelled, CronTick)
}
"""The data model of each event the engine emits."""

EventCheck = Callable[[Event], Event]
"""Checks an event before it is published: returns it (its data normalised) or raises
`InvalidEventError` naming every problem."""


def check_engine_event(event: Event) -> Event:
    """Check the data of an event the engine emits against its model; other events pass
    through unchanged. Raises `InvalidEventError` naming the event and every field at fault."""
    return check_data(event, ENGINE_DATA)


def check_data(event: Event, models: Mapping[str, type[EventData]]) -> Event:
    """`event` with its data checked against `models[event.name]` and normalised (dumped back
    as JSON); an event whose name is not in `models` passes through unchanged. Raises
    `InvalidEventError` naming the event and every field at fault. Only the data is
    validated: the envelope (`Event`) already was."""
    model = models.get(event.name)
    if model is None:
        return event
    try:
        data = model.model_validate(event.data)
    except ValidationError as exc:
        raise InvalidEventError(
            f"invalid data for event {event.name!r}: {problems(exc, 'data')}"
        ) from exc
    return event.model_copy(update={"data": data.model_dump(mode="json")})


def read_event(raw: Any) -> Event:
    """The envelope of an event from untrusted JSON-like input, its data not yet checked.
    Raises `InvalidEventError` naming every problem."""
    try:
        return Event.model_validate(raw)
    except ValidationError as exc:
        raise InvalidEventError(f"invalid event: {problems(exc, 'event')}") from exc
