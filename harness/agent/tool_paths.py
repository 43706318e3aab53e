"""A path-taking tool call is approved, shown and run on the path it resolves to.

The approval policy reads `arguments["path"]`, and the raw string says little: `write
/abs/workspace/functions/h.py`, `write ./x/../functions/h.py` and `write fn/h.py` with
`fn -> functions` all write `functions/h.py`, which must ask first. So before the gate, the
turn resolves the path inside the workspace (`resolve_in_workspace`: `..` and links
resolved) in a step, and hands the gate and the tool the same call with `path` replaced by
the workspace-relative result. The policy (pure) then decides on where the write lands, the
person sees that path, and the tool writes exactly there. Being a step, a replay decides on
what the first execution saw, even if a link changed meanwhile.

A path that cannot be resolved, or resolves outside the workspace or into a private folder,
is refused here with the tool's own error: the call neither asks nor runs, so nothing is
written and no approval is skipped by a link that changes between the check and the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.llm.types import ToolCall
from harness.runtime.steps import Context
from harness.tools.errors import ToolError
from harness.tools.paths import display_path, resolve_in_workspace

PATH_TOOLS = frozenset({"write", "edit", "send_file"})
"""The built-in tools whose approval, or what the person is shown, depends on their `path`."""


def resolve_call(ctx: Context, workspace: Path, call: ToolCall) -> ToolCall | str:
    """`call` with its `path` resolved inside `workspace` (workspace-relative, POSIX), or the
    refusal to give the model instead of running it. Calls of other tools, and calls without
    a string `path` (the tool rejects those itself), are returned as they are."""
    path = call.arguments.get("path")
    if call.name not in PATH_TOOLS or not isinstance(path, str):
        return call
    outcome: dict[str, Any] = ctx.step.run("tool-path", resolved_path, workspace, path)
    if "error" in outcome:
        return str(outcome["error"])
    arguments = {**call.arguments, "path": str(outcome["path"])}
    return call.model_copy(update={"arguments": arguments})


def resolved_path(workspace: Path, path: str) -> dict[str, str]:
    """`{"path": <workspace-relative resolved path>}`, or `{"error": <why not>}`."""
    try:
        return {"path": display_path(workspace, resolve_in_workspace(workspace, path))}
    except ToolError as exc:
        return {"error": str(exc)}
