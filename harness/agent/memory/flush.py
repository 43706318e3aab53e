"""The silent turn before compaction: the agent notes what matters before it is summarised.

Compaction replaces the older part of a conversation with a summary written for continuing
the task, not for knowing the person next week. So, just before, the model gets that part
once more with only the `remember` tool and is asked to save what is worth keeping. Nothing
of this turn is recorded in the session or sent to the user: its only effect is the notes.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.agent.compaction import render_for_summary
from harness.llm.types import AssistantTurn, Message, ToolCall, ToolSpec

REMEMBER = "remember"
MAX_NOTES = 20

FLUSH_PROMPT = """\
The older part of a conversation between a user and you, their AI assistant, is about to be \
replaced by a short summary; it is in the next message, followed by what is already in your \
memory. Before it goes, call the `remember` tool once for each fact about the user or their \
world that should still be known in a week: preferences, names, dates, decisions, \
commitments. Skip small talk, task details that the summary will keep, secrets, and anything \
already in memory. If nothing is worth keeping, reply with just "nothing to remember". Your \
reply is never shown to the user."""


def flush_request(old: Sequence[Message], memory: str) -> list[Message]:
    """The one user message of the silent turn: the part to be summarised, then the memory."""
    known = memory.strip() or "(nothing yet)"
    text = (
        f"<conversation>\n{render_for_summary(old)}\n</conversation>\n\n"
        f"<memory>\n{known}\n</memory>"
    )
    return [Message.user(text)]


def remember_spec(specs: Sequence[ToolSpec]) -> ToolSpec | None:
    """The `remember` tool among `specs`, or None when the agent cannot remember."""
    return next((spec for spec in specs if spec.name == REMEMBER), None)


def remember_calls(turn: AssistantTurn) -> list[ToolCall]:
    """The `remember` calls of the silent turn (other tools are ignored), at most
    `MAX_NOTES`."""
    return [call for call in turn.tool_calls if call.name == REMEMBER][:MAX_NOTES]
