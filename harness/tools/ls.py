"""The `ls` tool: one folder's entries."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError
from harness.tools.paths import display_path, is_hidden, resolve_in_workspace

MAX_ENTRIES = 500


class LsParams(ToolParams):
    """Arguments of the ls tool."""

    path: str = Field(default=".", description="Folder to list, relative to the workspace.")
    limit: int = Field(
        default=MAX_ENTRIES, ge=1, description=f"Most entries to return (at most {MAX_ENTRIES})."
    )


class LsTool(Tool[LsParams]):
    """List a folder's entries sorted by name, dotfiles included, folders marked with `/`.

    At most `limit` (<= 500) entries, with a note saying how many were left out. The
    workspace's hidden folders (`sessions/`, `.harness/`) are not listed.
    """

    name = "ls"
    description = (
        "List the entries of a folder, sorted, folders ending in '/', dotfiles included. "
        "Use find to search a whole tree."
    )
    parameters = LsParams
    timeout = 30.0

    def run(self, params: LsParams, ctx: ToolContext) -> str:
        """List the folder; see the class docstring."""
        path = resolve_in_workspace(ctx.workspace, params.path)
        shown = display_path(ctx.workspace, path)
        root = ctx.workspace.resolve()
        try:
            with os.scandir(path) as entries:
                names = sorted(
                    e.name + "/" if e.is_dir() else e.name
                    for e in entries
                    if not is_hidden(root, Path(e.path))
                )
        except FileNotFoundError:
            raise ToolError(f"folder not found: {shown}") from None
        except NotADirectoryError:
            raise ToolError(f"{shown} is a file, not a folder; use read to see it") from None
        except PermissionError:
            raise ToolError(f"permission denied: {shown}") from None
        if not names:
            return f"({shown} is empty)"
        limit = min(params.limit, MAX_ENTRIES)
        text = "\n".join(names[:limit])
        if len(names) > limit:
            text += f"\n\n[showing {limit} of {len(names)} entries]"
        return text
