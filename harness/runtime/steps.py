"""What a handler receives: the event, the durable step API, and facts about its run.

Steps are memoized in the run's journal: on replay (a retry, a resume after a crash, a
wake-up after a sleep) a completed step returns its recorded result without running again.
Step ids are auto-indexed per run, so `step.run("think", ...)` in a loop records `think:0`,
`think:1`, ... A handler must ask for its steps in the same order on every replay.

The run's state, its fenced journal writes and the interrupts that unwind a handler live in
`harness.runtime.run_state`; when a failed step is tried again, in `harness.runtime.retries`.
The interrupts are re-exported here, where handlers and the sidecar have always found them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from harness.envelope import Event
from harness.errors import (
    NonRetriableError,
    StepFailedError,
    StepResultError,
)
from harness.observe.tracing import StepSpan
from harness.redaction import redact
from harness.runtime import log_context, waiters
from harness.runtime.bus import publish, run_id_for
from harness.runtime.durations import parse_duration
from harness.runtime.expressions import resolve_path
from harness.runtime.functions import INVOKE_EVENT
from harness.runtime.instance import Runtime
from harness.runtime.previews import step_preview, usage_of
from harness.runtime.retries import backoff_seconds, retry_after, within_retry_budget
from harness.runtime.run_state import Cancelled, Interrupt, LeaseLost, RunState, Suspended
from harness.runtime.step_observers import CommittedStep, notify

T = TypeVar("T")
_MAX_ERROR_CHARS = 2000


@dataclass(frozen=True)
class Woken:
    """How `wait_for_event_or_inbox` ended: with the `event`, by a message handed to the
    run's inbox (`by_inbox`), or by the timeout (neither)."""

    event: Event | None
    by_inbox: bool = False


def _error_text(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {exc}")[:_MAX_ERROR_CHARS]


def _to_ms(when: datetime | str | float) -> int:
    if isinstance(when, str):
        when = datetime.fromisoformat(when)
    if isinstance(when, datetime):
        if when.tzinfo is None:
            raise ValueError(f"sleep_until needs a time zone-aware time, got {when.isoformat()}")
        return int(when.timestamp() * 1000)
    return int(float(when) * 1000)


class Step:
    """The durable step API. Every method records its outcome once per run."""

    def __init__(self, state: RunState) -> None:
        self._s = state

    # -- the API -----------------------------------------------------------------------
    def run(self, step_id: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(*args, **kwargs)` once per run and return its JSON result.

        On replay the recorded result is returned without calling `fn`. An exception is
        retried with backoff up to the function's `retries`; then (or at once for
        `NonRetriableError`) `StepFailedError` is raised here, now and on every replay.
        A result that is not JSON-serialisable raises `StepResultError` (not retried).
        An exception with a `retry_for` attribute (seconds: a rate limit, an overloaded
        server) is retried past `retries` until that long after the step first failed.
        The value returned is the JSON round trip of `fn`'s result (tuples become lists),
        so the first execution and every replay see the same thing.
        """
        key = self._s.step_key(step_id)
        rec = self._s.recorded(key, "run")
        if rec is not None:
            if "v" in rec:
                return rec["v"]  # type: ignore[no-any-return]
            if rec.get("final"):
                raise StepFailedError(step_id, rec["e"])
        failures = int(rec.get("n", 0)) if rec else 0
        first_failed = int(rec.get("f", rec.get("s", 0))) if rec else 0
        self._s.check_stop()
        self._s.attempt = failures
        log_context.STEP.set(key)
        span = self._s.span.step(key, "run", failures + 1)
        try:
            return self._run_once(key, step_id, span, (failures, first_failed), fn, args, kwargs)
        finally:
            span.end()

    def _run_once(
        self,
        key: str,
        step_id: str,
        span: StepSpan,
        failed: tuple[int, int],
        fn: Callable[..., T],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> T:
        """`failed`: the failures so far and when the first began (ms; 0 for none)."""
        failures, first_failed = failed
        started = self._s.runtime.now_ms()
        first_failed = first_failed or started
        try:
            value = fn(*args, **kwargs)
        except NonRetriableError as exc:
            self._fail(key, step_id, exc, (failures + 1, first_failed), started, span, final=True)
        except Exception as exc:
            final = failures >= self._s.spec.retries and not within_retry_budget(
                exc, first_failed, self._s.runtime.now_ms()
            )
            self._fail(key, step_id, exc, (failures + 1, first_failed), started, span, final=final)
        ended = self._s.runtime.now_ms()
        stamps = f'"s":{started},"t":{ended},"n":{failures + 1}'
        try:
            encoded = json.dumps(value, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as exc:
            message = (
                f"step {step_id!r} returned a {type(value).__name__}, which cannot be stored as "
                f"JSON ({exc}); return plain data: dict, list, str, int, float, bool or None"
            )
            span.failed(message, "StepResultError", final=True)
            self._s.commit(
                key, "{" + stamps + ',"k":"run","final":true,"e":' + json.dumps(message) + "}"
            )
            raise StepResultError(message) from exc
        usage = usage_of(value)
        extra = step_preview(args, kwargs, usage) if self._s.runtime.record_previews else ""
        record = "{" + stamps + ',"k":"run","v":' + encoded + extra + "}"
        # The journal keeps its own copy of the value (the caller may change what it gets);
        # the previews are not parsed back, nothing in this execution reads them.
        entry = {"s": started, "t": ended, "n": failures + 1, "k": "run",
                 "v": json.loads(encoded)}  # fmt: skip
        self._s.commit(key, record, entry)
        if usage is not None:
            span.model_call(cast(dict[str, Any], value), usage)
        s = self._s
        if s.runtime.step_observers:  # most runtimes have none: no record built per step
            step = CommittedStep(s.run_id, s.spec.id, s.event, key, usage, ended)
            notify(s.runtime.step_observers, step)
        return json.loads(encoded)  # type: ignore[no-any-return]

    def _fail(
        self,
        key: str,
        step_id: str,
        exc: Exception,
        failed: tuple[int, int],
        started_ms: int,
        span: StepSpan,
        *,
        final: bool,
    ) -> None:
        """Record the failure (`failed`: failures counting this one, and when the first of
        them began); raise `StepFailedError` when `final`, else park the run for the retry."""
        failures, first_failed = failed
        text = _error_text(exc)
        span.failed(text, type(exc).__name__, final=final)
        record = {
            "k": "run",
            "e": text,
            "n": failures,
            "f": first_failed,
            "s": started_ms,
            "t": self._s.runtime.now_ms(),
        }
        if final:
            self._s.commit(key, json.dumps({**record, "final": True}))
            raise StepFailedError(step_id, text) from exc
        self._s.commit(key, json.dumps(record))
        s = self._s
        delay = max(backoff_seconds(s.runtime.retry_backoff, failures), retry_after(exc))
        self._s.suspend(key, "retry", s.runtime.now_ms() + int(delay * 1000))
        raise Suspended()

    def send_event(self, step_id: str, event: Event | dict[str, Any]) -> str:
        """Publish an event exactly once per run. Returns its id.

        Without an explicit id (a dict without "id", or an `Event` built without one) the
        event gets one derived from the run and step, so a replay after a crash between
        publishing and recording publishes nothing new.
        """
        key = self._s.step_key(step_id)
        rec = self._s.recorded(key, "send")
        if rec is not None:
            return str(rec["v"])
        self._s.check_stop()
        # exclude_unset: an `Event`'s default id is random; it must not hide the derived one
        raw = (
            event.model_dump(mode="json", exclude_unset=True)
            if isinstance(event, Event)
            else dict(event)
        )
        raw.setdefault("id", f"{self._s.run_id}:{key}")
        started = self._s.runtime.now_ms()
        span = self._s.span.step(key, "send", 1)
        try:
            result = publish(raw, runtime=self._s.runtime)
            stamps = self._s.stamps(started)
            self._s.commit(
                key, "{" + stamps + ',"k":"send","v":' + json.dumps(result.event_id) + "}"
            )
        finally:
            span.end()
        return result.event_id

    def sleep(self, step_id: str, duration: str | float) -> None:
        """Suspend the run for a duration ("30s", "1h", seconds) without holding a worker."""
        self.sleep_until(step_id, self._s.runtime.clock() + parse_duration(duration))

    def sleep_until(self, step_id: str, when: datetime | str | float) -> None:
        """Suspend the run until a time (aware datetime, ISO 8601 string or epoch seconds)."""
        key = self._s.step_key(step_id)
        if self._s.recorded(key, "sleep") is not None:
            return
        self._s.check_stop()
        wake_ms = _to_ms(when)
        if wake_ms <= self._s.runtime.now_ms():
            self._s.commit(
                key, "{" + self._s.stamps(self._s.runtime.now_ms()) + ',"k":"sleep","v":null}'
            )
            return
        self._s.suspend(key, "sleep", wake_ms)
        raise Suspended()

    def wait_for_event(
        self,
        step_id: str,
        *,
        event: str,
        timeout: str | float,
        match: str | None = None,
        equals: str | None = None,
    ) -> Event | None:
        """Suspend until an event named `event` is published, or `timeout` passes (None).

        With `match="data.order_id"`, only an event whose `data.order_id` equals this run's
        triggering event's `data.order_id` resumes it; with `equals` as well, only one whose
        `data.order_id` equals `equals`. Values are compared as JSON. Events published before
        this step is first reached are not seen.
        """
        rec = self._wait(step_id, event, timeout, match, equals, wake_on_inbox=False)
        return Event.model_validate(rec["v"]) if rec["v"] is not None else None

    def wait_for_event_or_inbox(
        self,
        step_id: str,
        *,
        event: str,
        timeout: str | float,
        match: str | None = None,
        equals: str | None = None,
    ) -> Woken:
        """`wait_for_event`, which an event handed to this run's inbox (a steering message)
        also ends; one already in the inbox ends it at once. Take the inbox with
        `take_inbox` after a `Woken(by_inbox=True)`."""
        rec = self._wait(step_id, event, timeout, match, equals, wake_on_inbox=True)
        found = Event.model_validate(rec["v"]) if rec["v"] is not None else None
        return Woken(event=found, by_inbox=bool(rec.get("inbox")))

    def _wait(
        self,
        step_id: str,
        event: str,
        timeout: str | float,
        match: str | None,
        equals: str | None,
        *,
        wake_on_inbox: bool,
    ) -> dict[str, Any]:
        key = self._s.step_key(step_id)
        rec = self._s.recorded(key, "wait")
        if rec is None:
            self._s.check_stop()
            value = resolve_path(f"event.{match}", self._s.event) if match else None
            if match and equals is not None:
                value = equals
            wake = self._s.runtime.now_ms() + int(parse_duration(timeout) * 1000)
            out = self._s.suspend(
                key, "wait", wake, status="waiting", wait_event=event,
                waiter_bucket=waiters.bucket(match, value), wake_on_inbox=wake_on_inbox,
            )  # fmt: skip
            if out != 2:
                raise Suspended()
            rec = self._s.resolved_record(key)
        return rec

    def invoke(
        self,
        step_id: str,
        function_id: str,
        data: dict[str, Any] | None = None,
        timeout: str | float | None = None,
    ) -> Any:
        """Run another function with `data` as its event data and return its result.

        The caller suspends until the child finishes. A child that fails, or does not
        finish within `timeout`, raises `StepFailedError` here.
        """
        key = self._s.step_key(step_id)
        rec = self._s.recorded(key, "invoke")
        if rec is None:
            self._s.check_stop()
            s = self._s
            child = Event(name=INVOKE_EVENT, id=f"{s.run_id}:{key}", data=data or {})
            publish(child, runtime=s.runtime, target=function_id, parent=(s.run_id, key))
            wake = (
                None
                if timeout is None
                else s.runtime.now_ms() + int(parse_duration(timeout) * 1000)
            )
            if self._s.suspend(key, "invoke", wake, status="waiting") != 2:
                raise Suspended()
            rec = self._s.resolved_record(key)
        if "v" in rec:
            return rec["v"]
        raise StepFailedError(step_id, rec.get("e", "invoked function failed"))

    def start(self, step_id: str, function_id: str, data: dict[str, Any] | None = None) -> str:
        """Start another function with `data` as its event data, without waiting for it: a
        detached child. Returns the child's run id, the same on every replay (the child is
        started once). The child is listed under this run (`runs:parent:<run id>`) but its
        end wakes nothing here; follow it with its run record or an event it publishes."""
        key = self._s.step_key(step_id)
        rec = self._s.recorded(key, "send")
        if rec is not None:
            return str(rec["v"])
        self._s.check_stop()
        s = self._s
        child = Event(name=INVOKE_EVENT, id=f"{s.run_id}:{key}", data=data or {})
        started = s.runtime.now_ms()
        result = publish(
            child, runtime=s.runtime, target=function_id, parent=(s.run_id, key), detached=True
        )
        run_id = result.run_ids[0] if result.run_ids else run_id_for(function_id, child.id)
        s.commit(key, "{" + s.stamps(started) + ',"k":"send","v":' + json.dumps(run_id) + "}")
        return run_id

    def take_inbox(self, step_id: str = "inbox") -> list[Event]:
        """Events handed to this run while it held its singleton key (steer mode), oldest
        first, each returned exactly once across replays. Empty when there are none."""
        key = self._s.step_key(step_id)
        rec = self._s.recorded(key, "inbox")
        if rec is None:
            self._s.check_stop()
            s = self._s
            raw = s.runtime.ledger.drain_inbox(s.run_id, s.epoch, key, s.runtime.now_ms())
            if raw is None:
                s.request_stop(lost=True)
                raise LeaseLost()
            rec = json.loads(raw)
            s.journal[key] = rec
        return [Event.model_validate(e) for e in rec["v"]]


class Context:
    """What a handler receives. `cancelled` is set when the run is asked to stop, so a long
    step can watch it and abort early; the run itself stops at its next step boundary."""

    def __init__(self, state: RunState, logger: logging.Logger) -> None:
        self._state = state
        self.event = Event.model_validate(state.event)
        self.step = Step(state)
        self.run_id = state.run_id
        self.function_id = state.spec.id
        self.logger = logging.LoggerAdapter(logger, {"run_id": state.run_id})
        self.cancelled = state.abort

    @property
    def runtime(self) -> Runtime:
        """The runtime this run executes on (Redis client, keys, clock)."""
        return self._state.runtime

    def now(self) -> datetime:
        """The current time (UTC, aware) by the runtime's clock."""
        return datetime.fromtimestamp(self._state.runtime.clock(), UTC)

    def check_stop(self) -> None:
        """Raise the run's stop signal if it was asked to stop (cancelled, or its lease was
        lost). For step functions that noticed `cancelled` and gave up early."""
        self._state.check_stop()

    @property
    def attempt(self) -> int:
        """0 on the first try of the current unit of work (a step, or the handler), then 1, 2..."""
        return self._state.attempt


__all__ = ["Cancelled", "Context", "Interrupt", "LeaseLost", "Step", "Suspended"]
