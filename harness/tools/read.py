"""The `read` tool: a window of a text file's lines, with a hint to continue."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from pydantic import Field

from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError
from harness.tools.files import SNIFF_BYTES, looks_binary
from harness.tools.paths import display_path, resolve_in_workspace

MAX_LINES = 2000
MAX_BYTES = 50 * 1024


class ReadParams(ToolParams):
    """Arguments of the read tool."""

    path: str = Field(description="File to read, relative to the workspace.")
    offset: int = Field(default=1, ge=1, description="First line to return (1-based).")
    limit: int = Field(
        default=MAX_LINES,
        ge=1,
        description=f"Number of lines to return; at most {MAX_LINES} per call.",
    )


class ReadTool(Tool[ReadParams]):
    """Return up to 2,000 lines / 50 KB of a text file from `offset`, then a continuation hint.

    Errors (as `ToolError`): missing file, a directory, a binary file, an offset past the end.
    Invalid UTF-8 bytes are shown as U+FFFD. A single line longer than 50 KB is cut. Besides
    the workspace, the conversation's own transcript (`ctx.transcript`, by its absolute path)
    can be read; no other private file can.
    """

    name = "read"
    description = (
        "Read a text file. Returns at most 2000 lines or 50 KB per call; when the file is longer "
        "the output ends with the offset to pass to continue. Use offset/limit to read a part."
    )
    parameters = ReadParams
    timeout = 30.0
    outside_content = True

    def run(self, params: ReadParams, ctx: ToolContext) -> str:
        """Read the requested window of lines; see the class docstring."""
        if _is_transcript(params.path, ctx):
            assert ctx.transcript is not None
            path, shown = ctx.transcript, "this conversation's transcript"
        else:
            path = resolve_in_workspace(ctx.workspace, params.path)
            shown = display_path(ctx.workspace, path)
        if path.is_dir():
            raise ToolError(f"{shown} is a directory, not a file; use ls to list it")
        try:
            with path.open("rb") as handle:
                if looks_binary(handle.read(SNIFF_BYTES)):
                    raise ToolError(f"{shown} is a binary file; read only shows text files")
                handle.seek(0)
                return _window(handle, shown, params.offset, min(params.limit, MAX_LINES))
        except FileNotFoundError:
            raise ToolError(f"file not found: {shown}") from None
        except PermissionError:
            raise ToolError(f"permission denied: {shown}") from None


def _is_transcript(path: str, ctx: ToolContext) -> bool:
    """True if `path` names the conversation's own transcript by its absolute path."""
    if ctx.transcript is None or "\0" in path or not path.startswith("/"):
        return False
    return Path(path) == ctx.transcript


def _window(handle: BinaryIO, shown: str, offset: int, limit: int) -> str:
    """Stream the file once: collect the window, count every line for the hint."""
    kept: list[str] = []
    size = 0
    note = ""
    full = False
    total = 0
    for total, raw in enumerate(handle, 1):
        if total < offset or full:
            continue
        line = raw.removesuffix(b"\n").removesuffix(b"\r")
        if size + len(line) + 1 > MAX_BYTES:
            if not kept:
                kept.append(line[:MAX_BYTES].decode("utf-8", errors="ignore"))
                note = f"line {total} is longer than 50 KB and was cut; "
            full = True
            continue
        kept.append(line.decode("utf-8", errors="replace"))
        size += len(line) + 1
        full = len(kept) >= limit
    if total == 0:
        return f"({shown} is empty)"
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {shown}, which has {total} lines")
    last = offset + len(kept) - 1
    text = "\n".join(kept)
    if last < total:
        text += (
            f"\n\n[{note}showing lines {offset}-{last} of {total}; "
            f"use offset={last + 1} to continue]"
        )
    return text
