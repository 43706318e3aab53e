"""The agent sees its own load errors at once: `write` and `edit` on a file in `functions/`
append the sidecar's validation of that file to their result.

`FunctionChecked(tool)` wraps a tool; after a successful call on `functions/*.py` it runs the
same check as the sidecar (a fresh interpreter, the same environment, a timeout) and adds
"loaded: functions `x`; triggers ..." or the file's error with its line.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from harness.runtime.functions import REGISTRY
from harness.settings import Settings
from harness.sidecar.environment import function_environment
from harness.sidecar.loader import LoadReport
from harness.sidecar.sandbox import FunctionSandbox, refusal
from harness.sidecar.validate import validate
from harness.tools.base import Tool, ToolContext, ToolOutcome, ToolRegistry

CHECK_TIMEOUT_S = 10.0


class FunctionChecked(Tool[Any]):
    """`inner` (write or edit), plus the validation of the function file it touched."""

    def __init__(self, inner: Tool[Any], settings: Settings) -> None:
        self.inner = inner
        self.settings = settings
        self.name = inner.name
        self.description = inner.description
        self.parameters = inner.parameters
        self.timeout = inner.timeout + CHECK_TIMEOUT_S

    def run(self, params: Any, ctx: ToolContext) -> str | ToolOutcome:
        """Run the inner tool; when it touched `functions/<name>.py`, append the check."""
        result = self.inner.run(params, ctx)
        path = (ctx.workspace / str(getattr(params, "path", ""))).resolve()
        folder = ctx.workspace.resolve() / "functions"
        if path.parent != folder or path.suffix != ".py":
            return result
        check = check_file(path, self.settings, {fn.id for fn in REGISTRY.all()})
        if isinstance(result, ToolOutcome):
            return dataclasses.replace(result, content=f"{result.content}\n{check}")
        return f"{result}\n{check}"


def check_function_writes(registry: ToolRegistry, settings: Settings) -> None:
    """Wrap the registry's `write` and `edit` tools (those it has) in `FunctionChecked`."""
    for name in ("write", "edit"):
        tool = registry.get(name)
        if tool is not None:
            registry.replace(FunctionChecked(tool, settings))


def check_file(path: Path, settings: Settings, reserved: Collection[str]) -> str:
    """The sidecar's verdict on one file of `functions/`, as one or more lines of text (why
    no function runs, without loading any, when no sandbox can confine them here)."""
    sandbox = FunctionSandbox.from_settings(settings)
    why = refusal(sandbox, path.parent.parent)
    if why is not None:
        return f"sidecar: NOT loaded: the sidecar runs no function on this machine: {why}"
    env = function_environment(settings, os.environ)
    report = validate(
        path.parent, env=env, reserved=reserved, timeout=CHECK_TIMEOUT_S, sandbox=sandbox
    )
    if path.name.startswith("_"):
        return describe_helper(report, path.name)
    return describe(report, path.name)


def describe_helper(report: LoadReport, name: str) -> str:
    """A helper is not loaded by itself: say how the files that may import it fare."""
    if not report.errors:
        return f"sidecar: {name} is a helper; every function file loads"
    lines = [f"sidecar: {name} is a helper; files that do NOT load:"]
    lines += [f"- {e.describe()}" for e in report.errors]
    return "\n".join(lines)


def describe(report: LoadReport, name: str) -> str:
    """What the report says about file `name`."""
    if name in report.disabled:
        return f"sidecar: {name} is disabled (its first line is `# disabled`)"
    functions, errors = report.for_file(name)
    if errors:
        lines = [f"sidecar: NOT loaded: {e.describe()}" for e in errors]
        return "\n".join([*lines, "Fix the file; the sidecar reloads it when it changes."])
    if not functions:
        return f"sidecar: {name} loads, but declares no @function"
    ids = ", ".join(f"`{f.id}`" for f in functions)
    triggers = "; ".join(f"{f.id}: {', '.join(f.triggers)}" for f in functions)
    return f"sidecar: loaded: functions {ids}; triggers {triggers}"
