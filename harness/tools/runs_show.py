"""The `runs_show` tool: one run as `harness runs show` shows it, for the agent.

By run id (or a unique prefix), or the newest run of one of its functions. The header
(function, status, times, error), the trigger, the output, then each step (kind, status,
attempts) with its error. Every text is masked for secrets (the same `run_views` and
`step_details` the CLI uses, and `redact` over the whole), and cut at `MAX_CHARS`. Only runs
the agent may read (`function_scope.run_refusal`): its functions' and its own chat's.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from harness.errors import RunNotFoundError
from harness.observe.run_filters import RunFilter, find_runs
from harness.observe.run_views import resolve_run_id, run_view, step_views
from harness.observe.step_details import step_detail
from harness.redaction import redact, redact_json
from harness.runtime import Runtime
from harness.runtime.function_sources import FILE_SOURCE, source_ids
from harness.runtime.ledger import RunRecord
from harness.runtime.previews import event_preview, preview
from harness.tools.base import Tool, ToolContext, ToolOutcome, ToolParams
from harness.tools.errors import ToolError
from harness.tools.function_scope import run_refusal, runtime_of, session_of_ctx

MAX_CHARS = 8_000
OUTPUT_CHARS = 2_000
MAX_STEPS = 40


class RunsShowParams(ToolParams):
    """Arguments of `runs_show`: `run_id`, or `function` for its newest run."""

    run_id: str = Field(default="", max_length=80, description="The run's id (or a prefix).")
    function: str = Field(
        default="",
        max_length=200,
        description="Instead of run_id: show this function's newest run.",
    )

    @model_validator(mode="after")
    def _one_of(self) -> RunsShowParams:
        if bool(self.run_id.strip()) == bool(self.function.strip()):
            raise ValueError("give either run_id or function")
        return self


class RunsShowTool(Tool[RunsShowParams]):
    """Shows one run (see the module)."""

    name = "runs_show"
    description = (
        "Show one run of your functions (or of this chat): status, output or error, and each "
        "step with its error. Give run_id (from function_run or functions_list), or function "
        "for its newest run. Use it when a function failed, to see why."
    )
    parameters = RunsShowParams
    timeout = 30.0

    def run(self, params: RunsShowParams, ctx: ToolContext) -> ToolOutcome:
        """The run as text for the model and as data. Raises `ToolError` for an unknown run
        or one this chat may not read."""
        runtime = runtime_of(ctx)
        own = source_ids(runtime, FILE_SOURCE)
        record = _find(runtime, params, own)
        refused = run_refusal(runtime, record, own, session_of_ctx(ctx))
        if refused is not None:
            raise ToolError(f"{refused}; you may read runs of your functions and of this chat")
        return _shown(runtime, record)


def _find(runtime: Runtime, params: RunsShowParams, own: set[str]) -> RunRecord:
    if params.function.strip():
        function = params.function.strip()
        if function not in own:
            raise ToolError(f"{function!r} is not a function of your functions/ folder")
        found = find_runs(runtime, RunFilter(function=function), 1)
        if not found:
            raise ToolError(f"{function} has no run yet (try function_run)")
        return found[0]
    try:
        run_id = resolve_run_id(runtime, params.run_id.strip())
    except RunNotFoundError as exc:
        raise ToolError(str(exc)) from None
    record = runtime.ledger.run(run_id)
    if record is None:
        raise ToolError(f"run {run_id} has just expired")
    return record


def _shown(runtime: Runtime, record: RunRecord) -> ToolOutcome:
    view = run_view(record)
    journal = runtime.ledger.journal(record.id)
    steps = step_views(view, journal)[:MAX_STEPS]
    details = {key: step_detail(key, entry) for key, entry in journal.items()}
    lines = [
        f"run {view.id} of {view.function_id}: {view.status} (attempts {view.attempt})",
        f"trigger: {event_preview(record.event)}",
    ]
    output = ""
    if record.status == "completed":
        output = preview(record.result, OUTPUT_CHARS)
        lines.append(f"output: {output}")
    if view.error:
        lines.append(f"error: {view.error}")
    shown_steps = []
    for step in steps:
        error = details[step.key].error if step.key in details else ""
        lines.append(f"- step {step.key} ({step.kind}) {step.status}, attempts {step.attempts}")
        lines += [f"  error: {error}"] if error else []
        shown_steps.append({"key": step.key, "kind": step.kind, "status": step.status,
                            "attempts": step.attempts, "error": error})  # fmt: skip
    text = redact("\n".join(lines))
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + "\n[cut]"
    data = {"run_id": view.id, "function_id": view.function_id, "status": view.status,
            "error": view.error, "output": output, "steps": shown_steps}  # fmt: skip
    return ToolOutcome(text, structured=redact_json(data))
