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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from harness.envelope import Event
from harness.errors import StepFailedError
from harness.runtime import waiters
from harness.runtime.bus import publish, run_id_for
from harness.runtime.durations import parse_duration
from harness.runtime.expressions import resolve_path
from harness.runtime.functions import INVOKE_EVENT
from harness.runtime.instance import Runtime
from harness.runtime.run_state import Cancelled, Interrupt, LeaseLost, RunState, Suspended
from harness.runtime.run_step import RunSteps


@dataclass(frozen=True)
class Woken:
    """How `wait_for_event_or_inbox` ended: with the `event`, by a message handed to the
    run's inbox (`by_inbox`), or by the timeout (neither)."""

    event: Event | None
    by_inbox: bool = False


def _to_ms(when: datetime | str | float) -> int:
    if isinstance(when, str):
        when = datetime.fromisoformat(when)
    if isinstance(when, datetime):
        if when.tzinfo is None:
            raise ValueError(f"sleep_until needs a time zone-aware time, got {when.isoformat()}")
        return int(when.timestamp() * 1000)
    return int(float(when) * 1000)


class Step(RunSteps):
    """The durable step API. Every method records its outcome once per run (`run` and
    `run_all` are `RunSteps`')."""

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
            result = publish(raw, runtime=self._s.runtime, hold=self._s.kick_hold)
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

    def wait_for_run(self, step_id: str, run_id: str, *, timeout: str | float) -> bool:
        """Suspend until run `run_id` ends (completed, failed or cancelled): True, or False
        when `timeout` passes first. A run that has already ended, or is unknown (expired),
        returns True at once: whether it ended is checked when the wait is registered, in the
        same atomic step, so an ending is never missed. Read its record afterwards."""
        return bool(self._wait(step_id, "", timeout, None, None, wake_on_inbox=False,
                               watch_run=run_id).get("ended"))  # fmt: skip

    def _wait(
        self,
        step_id: str,
        event: str,
        timeout: str | float,
        match: str | None,
        equals: str | None,
        *,
        wake_on_inbox: bool,
        watch_run: str = "",
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
                watch_run=watch_run,
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
            publish(
                child, runtime=s.runtime, target=function_id, parent=(s.run_id, key),
                hold=s.kick_hold,
            )  # fmt: skip
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
        end wakes nothing here; follow it with `wait_for_run`, its run record or an event it
        publishes. Cancelling this run cancels it too while it is live."""
        key = self._s.step_key(step_id)
        rec = self._s.recorded(key, "send")
        if rec is not None:
            return str(rec["v"])
        self._s.check_stop()
        s = self._s
        child = Event(name=INVOKE_EVENT, id=f"{s.run_id}:{key}", data=data or {})
        started = s.runtime.now_ms()
        result = publish(
            child, runtime=s.runtime, target=function_id, parent=(s.run_id, key), detached=True,
            hold=s.kick_hold,
        )  # fmt: skip
        run_id = result.run_ids[0] if result.run_ids else run_id_for(function_id, child.id)
        s.commit(key, "{" + s.stamps(started) + ',"k":"send","v":' + json.dumps(run_id) + "}")
        return run_id

    def offload(self, service: str, request: str) -> dict[str, Any]:
        """Have a gateway of `service` make a slow call (`harness.runtime.calls`) while the
        run waits holding no worker; returns the outcome the gateway recorded (JSON, its
        shape is the service's business). Only inside the function of a `run` step: the
        call is that step's try, so a replay of the step gets the same outcome and a retry
        (the next attempt) makes a new call. The first time, records `request` (JSON text,
        all the gateway needs), parks the run and raises `Suspended`."""
        s = self._s
        call_id = self._call_id()
        # not read again when `offload_outcome` just found none for this call: the park
        # below notices an outcome recorded since (and returns it)
        found = None if s.unsettled_call == call_id else s.runtime.calls.outcome(call_id)
        s.unsettled_call = ""
        if found is not None:
            return found
        s.check_stop()
        key = s.running[0]
        out, version = s.runtime.calls.park(
            s.run_id, s.epoch, s.runtime.now_ms(), step_key=key, call_id=call_id,
            service=service, request=request, keep_s=s.runtime.retention_s,
        )  # fmt: skip
        if out == 0:
            s.request_stop(lost=True)
            raise LeaseLost()
        if out == 2:  # settled between the read and the park
            return s.runtime.calls.outcome(call_id) or {}
        s.runtime.journals.keep(s.run_id, version, s.journal)
        s.span.step(key, "call", 1).end()
        raise Suspended()

    def offload_outcome(self) -> dict[str, Any] | None:
        """The outcome of this try's offloaded call when it has one (what `offload` would
        return), else None: the replay that resumes after the call needs neither to announce
        it again nor to build its request."""
        call_id = self._call_id()
        found = self._s.runtime.calls.outcome(call_id)
        self._s.unsettled_call = "" if found is not None else call_id
        return found

    def _call_id(self) -> str:
        key, tries = self._s.running
        if not key:
            raise RuntimeError("step.offload is only for the function of a step.run")
        return f"{self._s.run_id}:{key}:{tries}"

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
    def started_ms(self) -> int:
        """When the run's first attempt began (ms since the epoch, by the runtime's clock):
        the same on every attempt, replay and resume of the run, so a deadline counted from it
        needs no step of its own. 0 only for a state built outside the executor."""
        return self._state.started_ms

    @property
    def attempt(self) -> int:
        """0 on the first try of the current unit of work (a step, or the handler), then 1, 2..."""
        return self._state.attempt


__all__ = ["Cancelled", "Context", "Interrupt", "LeaseLost", "Step", "Suspended"]
