"""The `ctx` a handler gets in the function host: the same API as `harness.runtime.Context`,
with every step sent over the pipe to the trusted executor, which journals it.

`ctx.step.run(name, fn, ...)` asks the executor; the executor answers with the recorded
value, or first asks (`RunFn`) for `fn` to run here and records what it gave. A sleep, wait
or invoke that parks the run is answered with `Interrupt`, which unwinds the handler with
`HostInterrupted` (a `BaseException`, like the runtime's own `Suspended`). There is no
`ctx.runtime`: the host holds no connection to the fleet's Redis.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from harness.errors import HarnessError
from harness.events import Event
from harness.runtime.steps import Interrupt as RuntimeInterrupt
from harness.runtime.steps import Woken
from harness.sidecar.faults import fault_of, host_exception
from harness.sidecar.wire import (
    Call,
    CheckStop,
    Interrupt,
    Now,
    Outcome,
    Reply,
    Request,
    RunFn,
    Seconds,
    StepInbox,
    StepInvoke,
    StepRun,
    StepSend,
    StepSleep,
    StepSleepUntil,
    StepWait,
    encode_value,
)

T = TypeVar("T")
Send = Callable[[Call | Outcome], None]


class HostInterrupted(RuntimeInterrupt):
    """The executor parked or stopped the run: the handler unwinds, nothing more is sent."""


class HostExecution:
    """One execution's side of the conversation. `inbox` receives the executor's `Reply`,
    `RunFn` and `Interrupt` for it; `call` is used by the handler's thread only."""

    def __init__(self, exec_id: str, send: Send, attempt: int) -> None:
        self.id = exec_id
        self.inbox: queue.Queue[Reply | RunFn | Interrupt] = queue.Queue()
        self.cancelled = threading.Event()
        self.attempt = attempt
        self._send = send
        self._interrupted = False

    def call(self, request: Request, fn: Callable[[], Any] | None = None) -> Any:
        """Send `request` and wait for its reply: the value, or the fault raised here. Runs
        `fn` when asked to (`step.run`). Raises `HostInterrupted` when the run parked."""
        if self._interrupted:
            raise HostInterrupted()
        self._send(Call(exec=self.id, request=request))
        while True:
            message = self.inbox.get()
            if isinstance(message, Interrupt):
                self._interrupted = True
                raise HostInterrupted()
            if isinstance(message, RunFn):
                assert fn is not None, "RunFn for a call without a function"
                self.attempt = message.attempt
                self._send(outcome(self.id, fn, final=False))
                continue
            if message.fault is not None:
                raise host_exception(message.fault)
            return message.value


def outcome(exec_id: str, fn: Callable[[], Any], *, final: bool) -> Outcome:
    """Run `fn` and describe what it gave; raises only `HostInterrupted`."""
    try:
        value = fn()
    except HostInterrupted:
        raise
    except BaseException as exc:  # SystemExit too: the agent's code must not end the host
        return Outcome(exec=exec_id, final=final, fault=fault_of(exc))
    text, bad_type = encode_value(value)
    return Outcome(exec=exec_id, final=final, json_text=text, unjsonable=bad_type)


class HostStep:
    """`ctx.step` in the host: `harness.runtime.Step`'s methods, journaled by the executor."""

    def __init__(self, execution: HostExecution) -> None:
        self._x = execution

    def run(self, step_id: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`Step.run`: `fn(*args, **kwargs)` once per run; its JSON result."""
        value: T = self._x.call(StepRun(step_id=step_id), functools.partial(fn, *args, **kwargs))
        return value

    def sleep(self, step_id: str, duration: Seconds) -> None:
        """`Step.sleep`."""
        self._x.call(StepSleep(step_id=step_id, duration=duration))

    def sleep_until(self, step_id: str, when: datetime | str | float) -> None:
        """`Step.sleep_until`."""
        moment = when.isoformat() if isinstance(when, datetime) else when
        self._x.call(StepSleepUntil(step_id=step_id, when=moment))

    def wait_for_event(
        self,
        step_id: str,
        *,
        event: str,
        timeout: Seconds,
        match: str | None = None,
        equals: str | None = None,
    ) -> Event | None:
        """`Step.wait_for_event`."""
        request = StepWait(
            step_id=step_id, event=event, timeout=timeout, match=match, equals=equals
        )
        found = self._x.call(request)
        return Event.model_validate(found) if found is not None else None

    def wait_for_event_or_inbox(
        self,
        step_id: str,
        *,
        event: str,
        timeout: Seconds,
        match: str | None = None,
        equals: str | None = None,
    ) -> Woken:
        """`Step.wait_for_event_or_inbox`."""
        request = StepWait(
            step_id=step_id, event=event, timeout=timeout, match=match, equals=equals,
            or_inbox=True,
        )  # fmt: skip
        answer = self._x.call(request)
        found = answer["event"]
        return Woken(
            event=Event.model_validate(found) if found is not None else None,
            by_inbox=bool(answer["by_inbox"]),
        )

    def invoke(
        self,
        step_id: str,
        function_id: str,
        data: dict[str, Any] | None = None,
        timeout: Seconds | None = None,
    ) -> Any:
        """`Step.invoke`."""
        request = StepInvoke(step_id=step_id, function_id=function_id, data=data, timeout=timeout)
        return self._x.call(request)

    def send_event(self, step_id: str, event: Event | dict[str, Any]) -> str:
        """`Step.send_event`; an event only the fleet may emit raises `EventRefusedError`."""
        raw = (
            event.model_dump(mode="json", exclude_unset=True)
            if isinstance(event, Event)
            else dict(event)
        )
        return str(self._x.call(StepSend(step_id=step_id, event=raw)))

    def take_inbox(self, step_id: str = "inbox") -> list[Event]:
        """`Step.take_inbox`."""
        return [Event.model_validate(e) for e in self._x.call(StepInbox(step_id=step_id))]


class HostContext:
    """`ctx` in the host: `event`, `step`, `run_id`, `function_id`, `logger`, `cancelled`,
    `now()`, `check_stop()`, `attempt`, as `harness.runtime.Context` has them."""

    def __init__(
        self,
        execution: HostExecution,
        event: dict[str, Any],
        run_id: str,
        function_id: str,
        logger: logging.Logger,
    ) -> None:
        self._x = execution
        self.event = Event.model_validate(event)
        self.step = HostStep(execution)
        self.run_id = run_id
        self.function_id = function_id
        self.logger = logging.LoggerAdapter(logger, {"run_id": run_id})
        self.cancelled = execution.cancelled

    @property
    def runtime(self) -> Any:
        """Not available: functions hold no connection to the fleet's Redis."""
        raise HarnessError(
            "ctx.runtime is not available to workspace functions: they run without access to "
            "the fleet's Redis; publish with ctx.step.send_event instead"
        )

    def now(self) -> datetime:
        """The current time (UTC, aware) by the runtime's clock."""
        return datetime.fromtimestamp(float(self._x.call(Now())), UTC)

    def check_stop(self) -> None:
        """Unwind the handler if the run was asked to stop."""
        self._x.call(CheckStop())

    @property
    def attempt(self) -> int:
        """0 on the first try of the current unit of work (a step, or the handler), then 1..."""
        return self._x.attempt
