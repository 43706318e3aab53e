"""The `write` tool: create or replace a whole file, atomically."""

from __future__ import annotations

from pydantic import Field

from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError
from harness.tools.paths import display_path, resolve_in_workspace
from harness.workspace_files import write_replace


class WriteParams(ToolParams):
    """Arguments of the write tool."""

    path: str = Field(description="File to write, relative to the workspace.")
    content: str = Field(description="The complete new content of the file.")


class WriteTool(Tool[WriteParams]):
    """Write `content` (UTF-8) to `path`, creating parent folders; replaces an existing file.

    The write is atomic (temporary file in the same folder, then `os.replace`). Refuses a path
    outside the workspace or one that is a directory. The resolved path is written without
    following a link (`harness.workspace_files`), so a link swapped in after the check (by a
    function running meanwhile) makes the write fail instead of landing elsewhere.
    """

    name = "write"
    description = (
        "Create a file or replace its whole content, creating parent folders as needed. "
        "To change part of an existing file use edit instead."
    )
    parameters = WriteParams
    timeout = 30.0

    def run(self, params: WriteParams, ctx: ToolContext) -> str:
        """Write the file; see the class docstring."""
        path = resolve_in_workspace(ctx.workspace, params.path)
        shown = display_path(ctx.workspace, path)
        if path.is_dir():
            raise ToolError(f"{shown} is a directory; give a file path")
        data = params.content.encode("utf-8")
        try:
            write_replace(ctx.workspace.resolve(), shown, data)
        except OSError as exc:
            raise ToolError(f"cannot write {shown}: {exc.strerror or exc}") from exc
        return f"wrote {len(data)} bytes to {shown}"
