"""Declaring functions: `@function(id=..., trigger=event(...) | cron(...), ...)`.

A declaration has two halves. The handler (Python code) lives only in the processes that
import it; the spec (triggers, retries, singleton, concurrency, queue) is plain data that is
written to Redis so that every publisher, in any process, can fan events out to it.
"""

from __future__ import annotations

import fnmatch
import threading
import zoneinfo
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from croniter import croniter
from pydantic import BaseModel, Field

from harness.envelope import CRON_TICK
from harness.errors import InvalidFunctionError
from harness.runtime.expressions import (
    check_path,
    check_predicate,
    evaluate_predicate,
    resolve_path,
)

if TYPE_CHECKING:
    from harness.runtime.steps import Context

SingletonMode = Literal["steer", "cancel", "queue"]
Handler = Callable[["Context"], Any]

CRON_EVENT = CRON_TICK
INVOKE_EVENT = "harness/invoke"
DEFAULT_QUEUE = "harness"
DELIVERY_QUEUE = "harness-delivery"
"""The queue of the runs that post replies to the chat platforms (`send-reply`). A worker
consumes it beside `DEFAULT_QUEUE` unless told otherwise (`WORKER_QUEUES`); on one host
`harness up` has its model gateway's process consume it instead (`harness gateway
--deliver`), so that the turns' worker is left to the turns."""
WORKER_QUEUES = (DEFAULT_QUEUE, DELIVERY_QUEUE)
"""The queues a worker consumes when none are named (`harness worker`, `celery worker`)."""


class EventTrigger(BaseModel, frozen=True):
    """Run on every event of this name (a `*` glob is allowed) whose data passes `if_`."""

    kind: Literal["event"] = "event"
    name: str
    if_: str | None = None


class CronTrigger(BaseModel, frozen=True):
    """Run on every tick of a five-field cron expression, in a time zone."""

    kind: Literal["cron"] = "cron"
    expression: str
    tz: str = "UTC"


Trigger = EventTrigger | CronTrigger


def event(name: str, if_: str | None = None) -> EventTrigger:
    """An event trigger. `if_` is an expression over `event`, e.g. `event.data.plan == 'pro'`."""
    if not name:
        raise InvalidFunctionError("an event trigger needs an event name")
    return EventTrigger(name=name, if_=check_predicate(if_) if if_ else None)


def cron(expression: str, tz: str = "UTC") -> CronTrigger:
    """A cron trigger. Raises `InvalidFunctionError` for a bad expression or time zone."""
    check_cron_expression(expression)
    try:
        check_time_zone(tz)
    except InvalidFunctionError as exc:
        raise InvalidFunctionError(f"{exc} for cron {expression!r}") from exc
    return CronTrigger(expression=expression, tz=tz)


def check_cron_expression(expression: str) -> str:
    """`expression` when the scheduler can parse it (five fields), else `InvalidFunctionError`
    (a `ValueError`, so settings validators may call it)."""
    if not croniter.is_valid(expression):
        raise InvalidFunctionError(
            f"invalid cron expression {expression!r}: use five fields, e.g. '0 9 * * *'"
        )
    return expression


def check_time_zone(tz: str) -> str:
    """`tz` when it names an IANA time zone this machine knows, else `InvalidFunctionError`
    (a `ValueError`)."""
    try:
        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidFunctionError(
            f"unknown time zone {tz!r}: use an IANA name, e.g. Europe/Paris"
        ) from exc
    return tz


class Singleton(BaseModel, frozen=True):
    """At most one run per key value at a time; `mode` says what a newer event does."""

    key: str
    mode: SingletonMode = "queue"


class Concurrency(BaseModel, frozen=True):
    """At most `limit` runs at once per key value (per function when `key` is None)."""

    limit: int = Field(ge=1)
    key: str | None = None


class FunctionSpec(BaseModel, frozen=True):
    """The data half of a function: what Redis stores in the trigger table."""

    id: str
    triggers: tuple[EventTrigger | CronTrigger, ...]
    retries: int = 3
    singleton: Singleton | None = None
    concurrency: tuple[Concurrency, ...] = ()
    catch_up: bool = False
    queue: str = DEFAULT_QUEUE
    timeout: float | None = None

    def listens_to(self, name: str) -> bool:
        """True when an event named `name` can start this function, before looking at its
        data (a trigger's `if`, a cron tick's function id): what `matches` checks first."""
        if name == INVOKE_EVENT:
            return False  # invocations target a function by id, never by fan-out
        if name == CRON_EVENT:
            return any(isinstance(t, CronTrigger) for t in self.triggers)
        return any(
            isinstance(t, EventTrigger) and fnmatch.fnmatchcase(name, t.name) for t in self.triggers
        )

    def matches(self, event: dict[str, Any]) -> bool:
        """True when this function should run for the event (as a JSON-like dict)."""
        name = event.get("name", "")
        data = event.get("data") or {}
        if not self.listens_to(name):
            return False
        if name == CRON_EVENT:
            return bool(data.get("function_id") == self.id)
        for trigger in self.triggers:
            if isinstance(trigger, EventTrigger) and fnmatch.fnmatchcase(name, trigger.name):
                if trigger.if_ is None or evaluate_predicate(trigger.if_, event):
                    return True
        return False

    def singleton_value(self, event: dict[str, Any]) -> str:
        """The singleton lock name for this event, or "" when the function has none."""
        if self.singleton is None:
            return ""
        return f"{self.id}:{_key_value(self.singleton.key, event)}"

    def concurrency_slots(self, event: dict[str, Any]) -> list[tuple[str, int]]:
        """(slot name, limit) pairs that this event's run must fit into."""
        return [
            (f"{self.id}:{i}:{_key_value(c.key, event) if c.key else '*'}", c.limit)
            for i, c in enumerate(self.concurrency)
        ]


def _key_value(path: str, event: dict[str, Any]) -> str:
    value = resolve_path(path, event)
    return "" if value is None else str(value)


@dataclass
class Function:
    """A declared function: its spec plus the handler that runs it."""

    spec: FunctionSpec
    handler: Handler

    @property
    def id(self) -> str:
        """The function id."""
        return self.spec.id

    def __call__(self, ctx: Context) -> Any:
        return self.handler(ctx)


@dataclass
class FunctionRegistry:
    """The functions known to this process. Thread-safe; re-registering an id replaces it."""

    _functions: dict[str, Function] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def register(self, fn: Function) -> Function:
        """Add or replace a function by id."""
        with self._lock:
            self._functions[fn.id] = fn
        return fn

    def unregister(self, function_id: str) -> None:
        """Forget a function; unknown ids are ignored."""
        with self._lock:
            self._functions.pop(function_id, None)

    def get(self, function_id: str) -> Function | None:
        """The function with this id, or None."""
        with self._lock:
            return self._functions.get(function_id)

    def all(self) -> list[Function]:
        """Every registered function, sorted by id."""
        with self._lock:
            return sorted(self._functions.values(), key=lambda f: f.id)


REGISTRY = FunctionRegistry()
_capture: ContextVar[FunctionRegistry | None] = ContextVar("function_capture", default=None)


@contextmanager
def capture_declarations(registry: FunctionRegistry) -> Iterator[FunctionRegistry]:
    """Inside this block, `@function` declarations that name no registry go to `registry`
    instead of the process-wide one (the sidecar loads workspace files this way, one file at a
    time, to know which file declared what)."""
    token = _capture.set(registry)
    try:
        yield registry
    finally:
        _capture.reset(token)


def function(
    *,
    id: str,
    trigger: Trigger | Iterable[Trigger],
    retries: int = 3,
    singleton: Singleton | None = None,
    concurrency: Iterable[Concurrency] = (),
    catch_up: bool = False,
    queue: str = DEFAULT_QUEUE,
    timeout: float | None = None,
    registry: FunctionRegistry | None = None,
) -> Callable[[Handler], Function]:
    """Declare a durable function. The handler receives a `Context` (event, step, run_id, ...).

    `timeout` bounds each execution of the handler in seconds; the sidecar enforces it (and
    applies `SIDECAR_RUN_TIMEOUT` when it is None), fleet workers do not.

    Raises `InvalidFunctionError` at declaration time for a bad id, trigger or setting, so
    mistakes surface when the module is imported, not when the first event arrives.
    """
    if not id or any(ch.isspace() for ch in id) or ":" in id:
        raise InvalidFunctionError(f"function id {id!r} must be non-empty, without spaces or ':'")
    if retries < 0:
        raise InvalidFunctionError(f"retries must be >= 0 for function {id!r}")
    if timeout is not None and not timeout > 0:
        raise InvalidFunctionError(f"timeout must be > 0 seconds for function {id!r}")
    triggers = (trigger,) if isinstance(trigger, EventTrigger | CronTrigger) else tuple(trigger)
    if not triggers:
        raise InvalidFunctionError(f"function {id!r} needs at least one trigger")
    if singleton is not None:
        check_path(singleton.key)
    concurrency = tuple(concurrency)
    for limit in concurrency:
        if limit.key is not None:
            check_path(limit.key)
    spec = FunctionSpec(
        id=id,
        triggers=triggers,
        retries=retries,
        singleton=singleton,
        concurrency=concurrency,
        catch_up=catch_up,
        queue=queue,
        timeout=timeout,
    )

    def decorate(handler: Handler) -> Function:
        target = registry or _capture.get() or REGISTRY
        return target.register(Function(spec=spec, handler=handler))

    return decorate
