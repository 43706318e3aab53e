"""The `grep` tool: a Python regex over the workspace's text files."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from pydantic import Field

from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError
from harness.tools.files import SNIFF_BYTES, looks_binary
from harness.tools.paths import display_path, resolve_in_workspace
from harness.tools.walk import compile_glob, walk

MAX_MATCHES = 100
MAX_LINE_CHARS = 500
MAX_OUTPUT_BYTES = 50 * 1024
MAX_FILE_BYTES = 10 * 1024 * 1024


class GrepParams(ToolParams):
    """Arguments of the grep tool."""

    pattern: str = Field(description="Python regular expression (or plain text with literal).")
    path: str = Field(default=".", description="File or folder to search, relative to workspace.")
    glob: str | None = Field(
        default=None, description="Only search files matching this glob, e.g. '*.py'."
    )
    ignore_case: bool = Field(default=False, description="Match case-insensitively.")
    literal: bool = Field(default=False, description="Treat pattern as plain text, not a regex.")
    context: int = Field(
        default=0, ge=0, le=20, description="Lines of context to show around each match."
    )
    limit: int = Field(default=MAX_MATCHES, ge=1, le=1000, description="Most matches to return.")


class GrepTool(Tool[GrepParams]):
    """Search text files for a regex; one `file:line: text` row per matching line.

    Context rows read `file-line- text`, non-adjacent groups are split by `--`. Binary files,
    files over 10 MB and `.git` are skipped. Lines are cut at 500 characters, output at 50 KB,
    matches at `limit`, each with a note. An invalid regex is a `ToolError`.
    """

    name = "grep"
    description = (
        "Search file contents with a Python regular expression. Returns 'file:line: text' for "
        "each matching line. Use glob to filter files, literal for plain text, context for "
        "surrounding lines. Prefer this to grep/rg in bash."
    )
    parameters = GrepParams
    timeout = 60.0
    outside_content = True

    def run(self, params: GrepParams, ctx: ToolContext) -> str:
        """Search; see the class docstring."""
        root = resolve_in_workspace(ctx.workspace, params.path)
        shown = display_path(ctx.workspace, root)
        source = re.escape(params.pattern) if params.literal else params.pattern
        try:
            regex = re.compile(source, re.IGNORECASE if params.ignore_case else 0)
        except re.error as exc:
            raise ToolError(f"invalid regular expression {params.pattern!r}: {exc}") from None
        if not root.exists():
            raise ToolError(f"path not found: {shown}")
        search = _Search(regex, params.context, params.limit)
        for path in _files(root, ctx, params.glob):
            if ctx.cancelled():
                raise ToolError("grep was stopped before it finished")
            if not search.scan(path, display_path(ctx.workspace, path)):
                break
        return search.report(f"no matches for {params.pattern!r} in {shown}")


def _files(root: Path, ctx: ToolContext, glob: str | None) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    matches = compile_glob(glob) if glob else None
    for entry in walk(root, ctx.workspace):
        if not entry.is_dir and (matches is None or matches(entry.relative)):
            yield entry.path


class _Search:
    """Accumulates output rows across files and knows when a cap is reached."""

    def __init__(self, regex: re.Pattern[str], context: int, limit: int) -> None:
        self.regex = regex
        self.context = context
        self.limit = limit
        self.rows: list[str] = []
        self.size = 0
        self.matches = 0
        self.notes: list[str] = []
        self.full = False

    def scan(self, path: Path, shown: str) -> bool:
        """Add one file's rows; return False once a cap stops the search."""
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                return True
            with path.open("rb") as handle:
                if looks_binary(handle.read(SNIFF_BYTES)):
                    return True
                handle.seek(0)
                return self._scan_lines(handle, shown)
        except OSError:
            return True

    def _scan_lines(self, handle: Iterator[bytes], shown: str) -> bool:
        before: deque[tuple[int, str]] = deque(maxlen=self.context)
        after = 0
        last = 0  # number of the last row shown from this file, 0 for none yet
        for number, raw in enumerate(handle, 1):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if self.regex.search(line):
                if self.matches == self.limit:
                    self.notes.append(f"stopped at {self.limit} matches; narrow the search")
                    return False
                first = before[0][0] if before else number
                if self.context and self.rows and (last == 0 or first > last + 1):
                    self._add("--")
                for row_number, row_line in before:
                    self._add(f"{shown}-{row_number}- {_cut(row_line)}")
                before.clear()
                self._add(f"{shown}:{number}: {_cut(line)}")
                self.matches += 1
                last, after = number, self.context
            elif after:
                self._add(f"{shown}-{number}- {_cut(line)}")
                last, after = number, after - 1
            elif self.context:
                before.append((number, line))
            if self.full:
                return False
        return True

    def _add(self, row: str) -> None:
        if self.full:
            return
        self.size += len(row.encode("utf-8")) + 1
        if self.size > MAX_OUTPUT_BYTES:
            self.full = True
            self.notes.append("output cut at 50 KB; narrow the search")
            return
        self.rows.append(row)

    def report(self, empty: str) -> str:
        """Return the rows and notes, or `empty` if nothing matched."""
        if not self.matches:
            return empty
        text = "\n".join(self.rows)
        if self.notes:
            text += f"\n\n[{self.notes[0]}]"
        return text


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " [line cut]"
