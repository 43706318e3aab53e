"""What the trusted executor and the untrusted function host say to each other: one JSON
object per line over the host's stdin (executor -> host) and stdout (host -> executor).

    executor -> host   Load, Execute, Reply, RunFn, Interrupt, Cancel
    host -> executor   Loaded, Call, Outcome

One execution (`exec`, an id the executor picks) is a conversation: `Execute`, then any
number of `Call`s from the handler, each answered by a `Reply` (or first by `RunFn`, which
asks the host to run the step's function now and send its `Outcome`), until the handler's
final `Outcome`. `Interrupt` tells the host that the run parked or stopped: its handler is
unwound. The executor trusts nothing it reads: a line that does not parse, or is longer
than `MAX_LINE`, means the host is broken (it is replaced).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from harness.runtime.function_sources import Declaration, LoadError
from harness.runtime.functions import FunctionSpec
from harness.sidecar.loader import LoadReport

MAX_LINE = 32 * 1024 * 1024
Seconds = str | float


class Fault(BaseModel, frozen=True):
    """An exception crossing the pipe. `kind` says how the receiving side treats it: `error`
    (retried), `non-retriable`, `step` (a step's own failure: the run fails), `step-failed`
    (a step spent its retries: `step_id` and `error` rebuild `StepFailedError`)."""

    type: str = Field(max_length=200)
    message: str
    kind: Literal["error", "non-retriable", "step", "step-failed"] = "error"
    step_id: str = ""
    error: str = ""
    retry_after: float | None = None
    retry_for: float | None = None


# -- executor -> host --------------------------------------------------------------------
class Load(BaseModel, frozen=True):
    """Import the folder now; `reserved` ids may not be declared, `skip` files not imported."""

    op: Literal["load"] = "load"
    reserved: list[str]
    skip: list[LoadError]


class Execute(BaseModel, frozen=True):
    """Run the handler of `function_id` for one execution of a run."""

    op: Literal["execute"] = "execute"
    exec: str
    function_id: str
    run_id: str
    event: dict[str, Any]
    attempt: int


class Reply(BaseModel, frozen=True):
    """The answer to the execution's pending `Call`: a JSON value, or a fault to raise."""

    op: Literal["reply"] = "reply"
    exec: str
    value: Any = None
    fault: Fault | None = None


class RunFn(BaseModel, frozen=True):
    """Run the pending `step.run`'s function now and send its `Outcome`; `attempt` is the
    step's failures so far (`ctx.attempt` inside the function)."""

    op: Literal["run_fn"] = "run_fn"
    exec: str
    attempt: int = 0


class Interrupt(BaseModel, frozen=True):
    """The run parked, was cancelled or lost its lease: unwind the handler."""

    op: Literal["interrupt"] = "interrupt"
    exec: str


class Cancel(BaseModel, frozen=True):
    """The run was asked to stop: set the handler's `ctx.cancelled`."""

    op: Literal["cancel"] = "cancel"
    exec: str


# -- host -> executor --------------------------------------------------------------------
class Loaded(BaseModel, frozen=True):
    """The load's report, the specs declared, which file declared each id, and the other
    declarations (`@network`: data the executor checks, `admission.admit_declarations`)."""

    op: Literal["loaded"] = "loaded"
    report: LoadReport
    specs: list[FunctionSpec]
    files: dict[str, str]
    declarations: list[Declaration] = []


class Outcome(BaseModel, frozen=True):
    """What a step's function (`final` False) or the handler (`final` True) gave: a JSON
    text, a fault, or (`unjsonable`) the name of the type that could not be encoded."""

    op: Literal["outcome"] = "outcome"
    exec: str
    final: bool
    json_text: str | None = None
    fault: Fault | None = None
    unjsonable: str = Field(default="", max_length=200)


class StepRun(BaseModel, frozen=True):
    name: Literal["step.run"] = "step.run"
    step_id: str


class StepSleep(BaseModel, frozen=True):
    name: Literal["step.sleep"] = "step.sleep"
    step_id: str
    duration: Seconds


class StepSleepUntil(BaseModel, frozen=True):
    name: Literal["step.sleep_until"] = "step.sleep_until"
    step_id: str
    when: Seconds


class StepWait(BaseModel, frozen=True):
    name: Literal["step.wait"] = "step.wait"
    step_id: str
    event: str
    timeout: Seconds
    match: str | None = None
    equals: str | None = None
    or_inbox: bool = False


class StepInvoke(BaseModel, frozen=True):
    name: Literal["step.invoke"] = "step.invoke"
    step_id: str
    function_id: str
    data: dict[str, Any] | None = None
    timeout: Seconds | None = None


class StepSend(BaseModel, frozen=True):
    name: Literal["step.send_event"] = "step.send_event"
    step_id: str
    event: dict[str, Any]


class StepInbox(BaseModel, frozen=True):
    name: Literal["step.take_inbox"] = "step.take_inbox"
    step_id: str


class CheckStop(BaseModel, frozen=True):
    name: Literal["check_stop"] = "check_stop"


class Now(BaseModel, frozen=True):
    name: Literal["now"] = "now"


Request = Annotated[
    StepRun | StepSleep | StepSleepUntil | StepWait | StepInvoke | StepSend | StepInbox
    | CheckStop | Now,
    Field(discriminator="name"),
]  # fmt: skip


class Call(BaseModel, frozen=True):
    """The handler of execution `exec` asks for `request`; it waits for the `Reply`."""

    op: Literal["call"] = "call"
    exec: str
    request: Request


ToHostMessage = Load | Execute | Reply | RunFn | Interrupt | Cancel
FromHostMessage = Loaded | Call | Outcome
ToHost = Annotated[ToHostMessage, Field(discriminator="op")]
FromHost = Annotated[FromHostMessage, Field(discriminator="op")]
TO_HOST: TypeAdapter[ToHost] = TypeAdapter(ToHost)
FROM_HOST: TypeAdapter[FromHost] = TypeAdapter(FromHost)


def encode(message: BaseModel) -> bytes:
    """One line of the wire."""
    return message.model_dump_json().encode() + b"\n"


def encode_value(value: object) -> tuple[str | None, str]:
    """`value` as JSON text the way the journal stores it (no NaN), or (None, the name of its
    type) when it cannot be."""
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False), ""
    except (TypeError, ValueError):
        return None, type(value).__name__
