"""The `function_run` tool: the agent test-runs one of its functions, or fires an event.

Risky (`Tool.risky`): it runs code the agent wrote, so it waits for a person's yes like bash.
The call runs inside the agent's turn, like delegation, as durable steps (a replay neither
runs the function nor sends the event again):

- `function`: "function-run-check" reads whether the id is one the sidecar loaded from
  `functions/` (never a fleet function: they trust their event's data) from the file's
  current text; while a reload is due (the file was just written or edited,
  `harness.sidecar.served_files`) it checks again after a one-second durable sleep, for at
  most `LOAD_WAIT_SECONDS`. Then "function-run"
  invokes it (`ctx.step.invoke`, `timeout` default 2m, at most 10m) where the sidecar serves
  it, and "function-run-id" records which run that was. The model reads the output, or the
  error and the run id to read with `runs_show`.
- `event`: "function-event-check" applies the sidecar's publish policy
  (`harness.sidecar.publish_policy.checked_event`: no event of the fleet's namespaces, a
  message only in a `system` session), then "function-event" sends it; the model reads its id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from harness.errors import EventRefusedError, StepFailedError
from harness.observe.child_runs import child_runs
from harness.redaction import redact
from harness.runtime import Runtime
from harness.runtime.durations import wait_limit
from harness.runtime.steps import Context
from harness.settings import DmPolicy
from harness.sidecar.publish_policy import checked_event
from harness.sidecar.served_chats import ServedChats
from harness.sidecar.served_files import Serving, serving
from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError

FUNCTION_RUN = "function_run"
MAX_TIMEOUT = "10m"
OUTPUT_CHARS = 4_000
LOAD_WAIT_SECONDS = 20
"""How long a run waits for the sidecar to load a function just written or edited."""
STALE_NOTE = "(This ran the previous text of the file: the sidecar has not loaded your change.)"


class FunctionRunParams(ToolParams):
    """Arguments of `function_run`: `function` or `event`, with `data`."""

    function: str = Field(default="", max_length=200, description="The id of your function to run.")
    event: str = Field(
        default="", max_length=200, description="Instead of function: the name of an event to send."
    )
    data: dict[str, Any] = Field(
        default_factory=dict, description="The event data the function gets (ctx.event.data)."
    )
    timeout: str = Field(
        default="2m", description='How long to wait for the function, e.g. "30s" (at most 10m).'
    )

    @field_validator("timeout")
    @classmethod
    def _a_duration(cls, value: str) -> str:
        return wait_limit(value, MAX_TIMEOUT)

    @model_validator(mode="after")
    def _one_of(self) -> FunctionRunParams:
        if bool(self.function.strip()) == bool(self.event.strip()):
            raise ValueError("give either function or event")
        return self


class FunctionRunTool(Tool[FunctionRunParams]):
    """The spec the model sees; the call itself is handled by the turn (`run_function`)."""

    name = FUNCTION_RUN
    description = (
        "Test-run one of your functions (functions/) with `data` as its event data and wait "
        "for its output or error (with the run id for runs_show); or send an `event` (not "
        "one of the fleet's agent./function. events) and get its id. Run every function you "
        "write once this way: 'loaded' only means the file imported."
    )
    parameters = FunctionRunParams
    risky = True

    def run(self, params: FunctionRunParams, ctx: ToolContext) -> str:
        raise ToolError("function_run runs inside the agent's turn, not through the registry")


def run_function(
    ctx: Context, arguments: dict[str, Any], dm_policy: DmPolicy, workspace: Path
) -> tuple[str, bool]:
    """Handle one `function_run` call durably (see the module): the text for the model and
    whether it is an error. Never raises for what the function does."""
    try:
        params = FunctionRunParams.model_validate(arguments)
    except ValidationError as exc:
        return f"invalid arguments for {FUNCTION_RUN}: {exc.errors()[0]['msg']}", True
    if params.event.strip():
        event = {"name": params.event.strip(), "data": params.data}
        checked = ctx.step.run("function-event-check", _checked, ctx.runtime, event, dm_policy)
        if "error" in checked:
            return checked["error"], True
        event_id = ctx.step.send_event("function-event", checked["event"])
        return f"Sent {params.event.strip()} (event {event_id}).", False
    function = params.function.strip()
    state = _loaded(ctx, workspace / "functions", function)
    if state == "absent":
        return f"{function!r} is not one of your functions/ (see functions_list)", True
    if state == "pending":
        return (
            f"the sidecar has not loaded {function!r} after {LOAD_WAIT_SECONDS} s: see "
            "functions_list for load errors and whether the sidecar runs",
            True,
        )
    note = "" if state == "current" else f" {STALE_NOTE}"
    output: Any = None
    error = ""
    try:
        output = ctx.step.invoke("function-run", function, params.data, timeout=params.timeout)
    except StepFailedError as exc:
        error = exc.error
    run_id = ctx.step.run("function-run-id", _newest_child, ctx.runtime, ctx.run_id, function)
    if error:
        text = f"{function} failed (run {run_id}): {error}\nSee its steps with runs_show.{note}"
        return redact(text), True
    shown = json.dumps(output, ensure_ascii=False, default=str)
    if len(shown) > OUTPUT_CHARS:
        shown = shown[:OUTPUT_CHARS] + f"... [cut at {OUTPUT_CHARS} characters]"
    return redact(f"{function} completed (run {run_id}). Output: {shown}{note}"), False


def _loaded(ctx: Context, folder: Path, function: str) -> Serving:
    """Whether the sidecar serves `function` from its file's text now, waiting durably (a
    sleep step a second at a time, at most `LOAD_WAIT_SECONDS`) while a reload is due."""
    state = ctx.step.run("function-run-check", serving, ctx.runtime, folder, function)
    for _ in range(LOAD_WAIT_SECONDS):
        if state in ("current", "absent"):
            break
        ctx.step.sleep("function-run-wait", 1)
        state = ctx.step.run("function-run-check", serving, ctx.runtime, folder, function)
    return state


def _checked(runtime: Runtime, event: dict[str, Any], dm_policy: DmPolicy) -> dict[str, Any]:
    """`{"event": ...}` as the publish policy lets it go, or `{"error": reason}`."""
    try:
        return {"event": checked_event(event, ServedChats.configured(runtime, dm_policy))}
    except EventRefusedError as exc:
        return {"error": str(exc)}


def _newest_child(runtime: Runtime, run_id: str, function_id: str) -> str:
    """The id of the newest run of `function_id` that run `run_id` invoked; "" if none is
    retained (invokes of one turn are sequential, so the newest is the one just made)."""
    mine = [c for c in child_runs(runtime, run_id) if c.function_id == function_id]
    return mine[-1].id if mine else ""
