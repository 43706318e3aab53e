"""The `remember` tool: the agent notes a fact in today's daily log."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

from pydantic import Field, StringConstraints

from harness.agent.memory.notes import append_note
from harness.agent.speakers import ABOUT_EXTRA
from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError

CLOCK_EXTRA = "now"
MAX_NOTE_CHARS = 2000


class RememberParams(ToolParams):
    """Arguments of the remember tool."""

    note: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_NOTE_CHARS)
    ] = Field(
        description=(
            "The fact to keep, written so it makes sense on its own later "
            "(who, what, when), e.g. 'The user's dentist appointment is on 2026-07-14 at 10:00'."
        )
    )


class RememberTool(Tool[RememberParams]):
    """Append `note` to today's log, `memory/YYYY-MM-DD.md`, and say where it went.

    The clock is `ctx.extras["now"]`, a callable returning an aware datetime in the agent's
    time zone (the date picks the file); without it, UTC now. A clock that returns anything
    else is reported as a tool error. In a group, `ctx.extras["about"]` names who wrote the
    message the note comes from (`Ana (telegram:123)`, `harness.agent.speakers`); the note is
    kept as `[Ana (telegram:123)] note`, so a shared memory does not mix people up.

    Each execution appends once: the agent loop runs the call inside a durable step, so a
    replayed step does not append again, but a step that crashes after the append and before
    it is recorded appends twice when retried.
    """

    name = "remember"
    description = (
        "Save a fact worth keeping beyond this conversation (a preference, a date, a decision, "
        "a name) to today's memory log. Recent logs and MEMORY.md are shown to you in every "
        "conversation. Do not save secrets or things already in memory."
    )
    parameters = RememberParams
    timeout = 10.0

    def run(self, params: RememberParams, ctx: ToolContext) -> str:
        """Append the note; see the class docstring."""
        now = _now(ctx)
        root = ctx.extras.get("memory_root", ctx.workspace)
        assert isinstance(root, Path)
        try:
            path = append_note(root, _attributed(params.note, ctx), now)
        except OSError as exc:
            raise ToolError(f"cannot write to memory: {exc.strerror or exc}") from exc
        if root != ctx.workspace:
            return "Noted in this conversation's memory"
        return f"Noted in {path.relative_to(ctx.workspace).as_posix()}"


def _attributed(note: str, ctx: ToolContext) -> str:
    """`note` headed by who it is about, when the turn is in a group."""
    about = ctx.extras.get(ABOUT_EXTRA)
    return f"[{about}] {note}" if isinstance(about, str) and about else note


def _now(ctx: ToolContext) -> datetime:
    clock = ctx.extras.get(CLOCK_EXTRA)
    if clock is None:
        return datetime.now(UTC)
    if not callable(clock):
        raise ToolError(f"remember is misconfigured: extras[{CLOCK_EXTRA!r}] is not callable")
    now = clock()
    if not isinstance(now, datetime) or now.utcoffset() is None:
        raise ToolError(
            f"remember is misconfigured: its clock returned {now!r}, not an aware datetime"
        )
    return now
