"""The `functions_list` tool: the agent's own functions, as `harness functions` sees them.

Each function the sidecar loaded from `functions/` with its file, triggers, next cron time and
its last runs (id, status, when, error), then the files that failed to load and whether the
sidecar is running. Read-only. Reuses `harness.sidecar.status.function_table` (what the CLI
prints) and shows only the file source's rows; runs the agent may not read
(`function_scope.run_refusal`) are left out.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from harness.observe.run_filters import RunFilter, find_runs
from harness.redaction import redact
from harness.runtime import Runtime
from harness.runtime.ledger import RunRecord
from harness.sidecar.status import function_table
from harness.tools.base import Tool, ToolContext, ToolOutcome, ToolParams
from harness.tools.function_scope import run_refusal, runtime_of, session_of_ctx

MAX_CHARS = 8_000
ERROR_CHARS = 200
SCAN_RUNS = 20
"""How many of a function's newest runs are read to find the ones shown."""


class FunctionsListParams(ToolParams):
    """Arguments of `functions_list`."""

    runs: int = Field(
        default=3, ge=0, le=10, description="How many last runs to show per function."
    )


class FunctionsListTool(Tool[FunctionsListParams]):
    """Lists the workspace's functions (see the module)."""

    name = "functions_list"
    description = (
        "List your functions (the files of functions/ the sidecar loaded): each with its "
        "triggers, next cron time and last runs (id, status, error), and the files that "
        "failed to load. Use after writing a function, then test it with function_run."
    )
    parameters = FunctionsListParams
    timeout = 30.0

    def run(self, params: FunctionsListParams, ctx: ToolContext) -> ToolOutcome:
        """The list as text for the model and as data; see the class."""
        runtime = runtime_of(ctx)
        session = session_of_ctx(ctx)
        table = function_table(runtime, ())
        rows = [row for row in table.functions if row.source == "file"]
        own = {row.id for row in rows}
        lines = [f"sidecar: {'running' if table.sidecar_alive else 'NOT running'}"]
        listed: list[dict[str, Any]] = []
        for row in rows:
            runs = _last_runs(runtime, row.id, own, session, params.runs)
            lines.append(f"- {row.id} ({row.file}): {', '.join(row.triggers) or 'no trigger'}")
            if row.next_cron:
                lines.append(f"  next cron: {row.next_cron}")
            lines += [
                f"  run {r['id']} {r['status']} {r['at']} {r['error']}".rstrip() for r in runs
            ]
            listed.append({"id": row.id, "file": row.file, "triggers": row.triggers,
                           "next_cron": row.next_cron, "runs": runs})  # fmt: skip
        if not rows:
            lines.append("no function is loaded from functions/")
        errors = [redact(e.describe()) for e in table.load_errors]
        lines += [f"failed to load: {e}" for e in errors]
        text = "\n".join(lines)
        if len(text) > MAX_CHARS:
            text = text[:MAX_CHARS] + "\n[cut; ask for fewer runs]"
        data = {"sidecar_alive": table.sidecar_alive, "functions": listed, "load_errors": errors}
        return ToolOutcome(text, structured=data)


def _last_runs(
    runtime: Runtime, function_id: str, own: set[str], session: str, limit: int
) -> list[dict[str, str]]:
    """The newest `limit` runs of `function_id` this chat may read, newest first."""
    if not limit:
        return []
    found = find_runs(runtime, RunFilter(function=function_id), SCAN_RUNS)
    shown = [r for r in found if run_refusal(runtime, r, own, session) is None]
    return [_run(r) for r in shown[:limit]]


def _run(record: RunRecord) -> dict[str, str]:
    at = datetime.fromtimestamp(record.created_at / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    error = " ".join(redact(record.error).split())  # masked before the cut
    return {"id": record.id, "status": record.status, "at": at, "error": error[:ERROR_CHARS]}
