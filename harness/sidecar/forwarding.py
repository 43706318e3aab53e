"""The trusted half of an execution: the handler the executor registers for a workspace
function, which runs it in the function host and serves the host's calls with the real `ctx`.

Everything the host asks for goes through the runtime's own `Step` in this thread, so
journaling, retries, exactly-once publishing, sleeps, waits and invocations behave exactly
as for code running in the executor. The host never holds a credential: it gets values
back, never the runtime. What a function may reach through it is decided here, by `perform`
and the `Reach` it is given: `step.send_event` publishes what `publish_policy.checked_event`
returns (fleet events refused, a message to the agent rebuilt unattended and answered only
in a served chat), `step.invoke` targets the sidecar's own functions, and an agent or network
run only as `harness.agent.api` asks for one, unattended (`invoke_policy`).
The other requests reach nothing but the function's own run: its sleeps, its waits (which,
like a trigger, may read any event), its inbox, its journal.
"""

from __future__ import annotations

import json
import queue
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.runtime.functions import Function, FunctionSpec, Handler
from harness.runtime.steps import Context, Interrupt
from harness.sidecar.faults import executor_exception, fault_of, unencodable
from harness.sidecar.host_link import GONE, HostGone, HostLink, Inbox
from harness.sidecar.invoke_policy import checked_invoke
from harness.sidecar.publish_policy import checked_event
from harness.sidecar.served_chats import ServedChats
from harness.sidecar.wire import (
    Call,
    Cancel,
    CheckStop,
    Execute,
    Now,
    Outcome,
    Reply,
    Request,
    RunFn,
    StepInbox,
    StepInvoke,
    StepRun,
    StepSend,
    StepSleep,
    StepSleepUntil,
    StepWait,
    ToHostMessage,
)
from harness.sidecar.wire import Interrupt as InterruptMessage

CANCEL_POLL_S = 0.25


@dataclass(frozen=True)
class Reach:
    """What one executor lets its functions reach: `own_ids`, the functions its host loaded
    from `functions/` (with an agent or network run, the only ones `step.invoke` may
    target), and `served`, the chats a
    function's message to the agent may be answered in."""

    own_ids: frozenset[str]
    served: ServedChats


def forwarding_function(spec: FunctionSpec, link: HostLink, reach: Reach) -> Function:
    """A function with `spec` whose handler runs the host's handler of the same id, serving
    its requests within `reach`."""

    def handler(ctx: Context) -> Any:
        process, exec_id = link.channel()
        with process.inbox(exec_id) as inbox:
            process.send(
                Execute(
                    exec=exec_id, function_id=spec.id, run_id=ctx.run_id,
                    event=ctx.event.model_dump(mode="json"), attempt=ctx.attempt,
                )
            )  # fmt: skip
            return _Execution(process.send, inbox, exec_id, ctx, reach).run()

    run: Handler = handler
    return Function(spec=spec, handler=run)


class _Execution:
    """Serves one execution's calls until the host sends the handler's outcome."""

    def __init__(
        self,
        send: Callable[[ToHostMessage], None],
        inbox: Inbox,
        exec_id: str,
        ctx: Context,
        reach: Reach,
    ) -> None:
        self._say = send
        self._inbox = inbox
        self._id = exec_id
        self._ctx = ctx
        self._reach = reach
        self._cancel_sent = False

    def run(self) -> Any:
        """The handler's result; raises what it raised, or the runtime's interrupt."""
        return self._until_outcome(final=True)

    def _until_outcome(self, *, final: bool) -> Any:
        while True:
            message = self._next()
            if isinstance(message, Call):
                self._answer(message.request)
                continue
            if message.final != final:
                raise HostGone()  # out of turn: the host broke the conversation
            return _value_of(message)

    def _next(self) -> Call | Outcome:
        while True:
            try:
                message = self._inbox.get(timeout=CANCEL_POLL_S)
            except queue.Empty:
                self._watch_cancel()
                continue
            if message is GONE:
                raise HostGone()
            return message

    def _watch_cancel(self) -> None:
        if self._ctx.cancelled.is_set() and not self._cancel_sent:
            self._cancel_sent = True
            self._say(Cancel(exec=self._id))

    def _answer(self, request: Request) -> None:
        try:
            value = perform(self._ctx, request, self._reach, self._run_in_host)
        except Interrupt:
            self._say(InterruptMessage(exec=self._id))
            raise
        except Exception as exc:
            self._say(Reply(exec=self._id, fault=fault_of(exc)))
            return
        self._say(Reply(exec=self._id, value=value))

    def _run_in_host(self) -> Any:
        """The step's function, run in the host now: its value, or what it raised."""
        self._say(RunFn(exec=self._id, attempt=self._ctx.attempt))
        return self._until_outcome(final=False)


def perform(ctx: Context, request: Request, reach: Reach, run_in_host: Callable[[], Any]) -> Any:
    """What the executor does for one request of a function's handler, with the run's own
    `ctx`: the step's value as JSON data. `run_in_host` runs a `step.run`'s function in the
    host. Raises what the step raised (the runtime's interrupt included), `EventRefusedError`
    or `InvokeRefusedError` for what the function may not reach (see `Reach`)."""
    step = ctx.step
    match request:
        case StepRun():
            return step.run(request.step_id, run_in_host)
        case StepSleep():
            return step.sleep(request.step_id, request.duration)
        case StepSleepUntil():
            return step.sleep_until(request.step_id, request.when)
        case StepWait(or_inbox=False):
            found = step.wait_for_event(
                request.step_id, event=request.event, timeout=request.timeout,
                match=request.match, equals=request.equals,
            )  # fmt: skip
            return found.model_dump(mode="json") if found is not None else None
        case StepWait():
            woken = step.wait_for_event_or_inbox(
                request.step_id, event=request.event, timeout=request.timeout,
                match=request.match, equals=request.equals,
            )  # fmt: skip
            event = woken.event.model_dump(mode="json") if woken.event is not None else None
            return {"event": event, "by_inbox": woken.by_inbox}
        case StepInvoke():
            data = checked_invoke(request.function_id, request.data, reach.own_ids)
            return step.invoke(request.step_id, request.function_id, data, request.timeout)
        case StepSend():
            return step.send_event(request.step_id, checked_event(request.event, reach.served))
        case StepInbox():
            return [e.model_dump(mode="json") for e in step.take_inbox(request.step_id)]
        case CheckStop():
            return ctx.check_stop()
        case Now():
            return ctx.runtime.clock()


def _value_of(outcome: Outcome) -> Any:
    if outcome.fault is not None:
        raise executor_exception(outcome.fault)
    if outcome.unjsonable:
        return unencodable(outcome.unjsonable)
    return json.loads(outcome.json_text) if outcome.json_text is not None else None
