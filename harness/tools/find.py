"""The `find` tool: paths in the workspace matching a glob."""

from __future__ import annotations

from pydantic import Field

from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError
from harness.tools.paths import display_path, resolve_in_workspace
from harness.tools.walk import compile_glob, walk

MAX_RESULTS = 1000


class FindParams(ToolParams):
    """Arguments of the find tool."""

    pattern: str = Field(
        min_length=1,
        description=(
            "Glob such as '**/*.py', 'src/**/test_*.py' or '*.{ts,tsx}'. Without '/' it matches "
            "file names at any depth; with '/' it matches the path relative to `path`."
        ),
    )
    path: str = Field(default=".", description="Folder to search, relative to the workspace.")
    limit: int = Field(
        default=MAX_RESULTS, ge=1, description=f"Most paths to return (at most {MAX_RESULTS})."
    )


class FindTool(Tool[FindParams]):
    """Return the files and folders under `path` matching `pattern`, sorted, one per line.

    Paths are relative to the workspace; folders end with `/`. `.git` is skipped. Stops at
    `limit` (<= 1000) matches with a note. Stops early when `ctx.cancel` is set.
    """

    name = "find"
    description = (
        "Find files by glob pattern (e.g. '**/*.py'). Returns paths relative to the workspace, "
        "skipping .git. Prefer this to running find or ls -R in bash."
    )
    parameters = FindParams
    timeout = 60.0

    def run(self, params: FindParams, ctx: ToolContext) -> str:
        """Search the tree; see the class docstring."""
        root = resolve_in_workspace(ctx.workspace, params.path)
        shown = display_path(ctx.workspace, root)
        if not root.is_dir():
            raise ToolError(f"folder not found: {shown}")
        matches = compile_glob(params.pattern)
        limit = min(params.limit, MAX_RESULTS)
        found: list[str] = []
        more = False
        for entry in walk(root, ctx.workspace):
            if ctx.cancelled():
                raise ToolError("find was stopped before it finished")
            if not matches(entry.relative):
                continue
            if len(found) == limit:
                more = True
                break
            path = display_path(ctx.workspace, entry.path)
            found.append(path + "/" if entry.is_dir else path)
        if not found:
            return f"no paths under {shown} match {params.pattern!r}"
        text = "\n".join(sorted(found))
        if more:
            text += f"\n\n[stopped at {limit} paths; narrow the pattern or the path]"
        return text
