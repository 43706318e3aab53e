"""The loop as a plain function, driven by a scripted think: no Celery, no Redis."""

from __future__ import annotations

from collections.abc import Sequence

from harness.agent.loop import FINAL_CALL_NOTE, budget_note, run_agent_loop
from harness.llm.types import AssistantTurn, Message, ToolCall, ToolResult, ToolSpec

TOOLS = [ToolSpec(name="ls", description="list")]


def _tool_turn(n: int) -> AssistantTurn:
    return AssistantTurn(
        tool_calls=(ToolCall(id=f"c{n}", name="ls"),), stop_reason="tool_use", model="m"
    )


def test_budget_notes_reach_the_call_only_and_the_last_call_has_no_tools() -> None:
    # Given a model that never stops calling tools
    notes: list[str] = []
    offered: list[int] = []
    recorded: list[Message] = []

    def think(messages: Sequence[Message], tools: Sequence[ToolSpec], note: str) -> AssistantTurn:
        notes.append(note)
        offered.append(len(tools))
        if not tools:
            return AssistantTurn(text="final", stop_reason="end", model="m")
        return _tool_turn(len(notes))

    outcome = run_agent_loop(
        [Message.user("go")], TOOLS, think=think,
        act=lambda call: ToolResult(tool_call_id=call.id, content="ok"),
        steer=lambda: [], record=recorded.append, max_iterations=20,
    )  # fmt: skip
    # Then warnings start at 50% and sharpen at 85%, and the 20th call must answer
    assert notes[:9] == [""] * 9
    assert "half" in notes[9] and "half" in notes[15]
    assert "almost out" in notes[16] and "almost out" in notes[18]
    assert notes[19] == FINAL_CALL_NOTE
    assert offered[-1] == 0 and set(offered[:-1]) == {1}
    assert outcome.text == "final" and outcome.iterations == 20
    assert not any(n and n in m.text for m in recorded for n in notes), "notes are never persisted"


def test_budget_note_is_empty_early() -> None:
    assert budget_note(0, 20) == "" and budget_note(8, 20) == ""


def test_steering_messages_enter_before_the_next_think() -> None:
    inbox = [[], [Message.user("also this")], []]
    seen: list[list[str]] = []

    def think(messages: Sequence[Message], tools: Sequence[ToolSpec], note: str) -> AssistantTurn:
        seen.append([m.text for m in messages if m.role == "user"])
        return (
            _tool_turn(1)
            if len(seen) == 1
            else AssistantTurn(text="done", stop_reason="end", model="m")
        )

    run_agent_loop(
        [Message.user("first")], TOOLS, think=think,
        act=lambda call: ToolResult(tool_call_id=call.id, content="ok"),
        steer=lambda: inbox.pop(0), record=lambda m: None,
    )  # fmt: skip
    assert seen == [["first"], ["first", "also this"]]
