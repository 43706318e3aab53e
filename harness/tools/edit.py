"""The `edit` tool: exact-text replacements in one file, all applied or none."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError
from harness.tools.files import read_text_file
from harness.tools.paths import display_path, resolve_in_workspace
from harness.workspace_files import write_replace


class TextEdit(BaseModel):
    """One replacement: `old_text` must occur exactly once in the original file."""

    model_config = ConfigDict(extra="forbid")

    old_text: str = Field(
        description="Exact text to replace, including whitespace; must occur exactly once."
    )
    new_text: str = Field(description="Text to put in its place.")


class EditParams(ToolParams):
    """Arguments of the edit tool."""

    path: str = Field(description="File to edit, relative to the workspace.")
    edits: list[TextEdit] = Field(
        min_length=1,
        description="Replacements, each matched against the original file; they must not overlap.",
    )


@dataclass(frozen=True)
class _Span:
    number: int
    start: int
    end: int
    new_text: str


class EditTool(Tool[EditParams]):
    """Apply every edit to the file, or none of them.

    Each `old_text` is located in the ORIGINAL content and must occur exactly once; matched
    regions must not overlap. If any edit fails, the file is untouched and the error names each
    failing edit (1-based) and why: not found, found N times, or overlaps edit K.
    """

    name = "edit"
    description = (
        "Replace exact text in an existing file. Each old_text must match exactly once in the "
        "current file (copy it from read output, whitespace included) and edits must not overlap; "
        "all edits are applied or none. Read the file first."
    )
    parameters = EditParams
    timeout = 30.0

    def run(self, params: EditParams, ctx: ToolContext) -> str:
        """Edit the file; see the class docstring."""
        path = resolve_in_workspace(ctx.workspace, params.path)
        shown = display_path(ctx.workspace, path)
        original = read_text_file(path, shown)
        spans, problems = _locate(original, params.edits)
        problems += _overlaps(spans)
        if problems:
            hint = " (the file uses CRLF line endings)" if "\r\n" in original else ""
            raise ToolError(
                f"no edits applied to {shown}{hint}:\n" + "\n".join(f"- {p}" for p in problems)
            )
        updated = original
        for span in sorted(spans, key=lambda s: s.start, reverse=True):
            updated = updated[: span.start] + span.new_text + updated[span.end :]
        if updated == original:
            return f"no change: the edits leave {shown} as it was"
        try:
            write_replace(ctx.workspace.resolve(), shown, updated.encode("utf-8"))
        except OSError as exc:
            raise ToolError(f"cannot write {shown}: {exc.strerror or exc}") from exc
        count = len(spans)
        return f"applied {count} edit{'s' if count != 1 else ''} to {shown}"


def _locate(content: str, edits: list[TextEdit]) -> tuple[list[_Span], list[str]]:
    spans: list[_Span] = []
    problems: list[str] = []
    for number, edit in enumerate(edits, 1):
        if not edit.old_text:
            problems.append(f"edit {number}: old_text is empty")
            continue
        positions = _occurrences(content, edit.old_text)
        if not positions:
            problems.append(f"edit {number}: old_text not found")
        elif len(positions) > 1:
            problems.append(
                f"edit {number}: old_text found {len(positions)} times; "
                "include more surrounding text so it matches exactly once"
            )
        else:
            start = positions[0]
            spans.append(_Span(number, start, start + len(edit.old_text), edit.new_text))
    return spans, problems


def _occurrences(content: str, needle: str) -> list[int]:
    """Every start index of `needle`, overlapping ones included (`aa` occurs twice in `aaa`)."""
    found: list[int] = []
    index = content.find(needle)
    while index != -1:
        found.append(index)
        index = content.find(needle, index + 1)
    return found


def _overlaps(spans: list[_Span]) -> list[str]:
    problems: list[str] = []
    for span in spans:
        for other in spans:
            if other.number < span.number and span.start < other.end and other.start < span.end:
                problems.append(f"edit {span.number}: overlaps edit {other.number}")
                break
    return problems
