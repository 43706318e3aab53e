"""Tool-result pruning before each think: old results cut or cleared, recent turns untouched."""

from __future__ import annotations

import pytest

from harness.agent.pruning import cleared_marker, omitted_marker, prune_tool_results
from harness.llm.types import Message, ToolCall, ToolResult


def _turn(tag: str, *sizes: int) -> list[Message]:
    """A user turn whose assistant calls one tool per size; result i is `sizes[i]` chars long.

    Each result is distinct at its head and tail so trimming can be checked exactly.
    """
    calls = tuple(ToolCall(id=f"{tag}{i}", name="read") for i in range(len(sizes)))
    results = tuple(
        ToolResult(tool_call_id=f"{tag}{i}", content=_body(size)) for i, size in enumerate(sizes)
    )
    return [
        Message.user(f"turn {tag}"),
        Message.assistant("", calls),
        Message.tool(*results),
        Message.assistant(f"done {tag}"),
    ]


def _body(size: int) -> str:
    return "".join(chr(ord("a") + i % 26) for i in range(size))


def _recent() -> list[Message]:
    """Three protected turns, with results big enough to be pruned if they were old."""
    return _turn("p", 60_000) + _turn("q", 5_000) + _turn("r", 4_001)


def _old_results(messages: list[Message]) -> list[ToolResult]:
    return [r for m in messages[: len(messages) - len(_recent())] for r in m.tool_results]


def test_prune_keeps_a_result_of_exactly_max_result_chars() -> None:
    messages = _turn("a", 4_000) + _recent()
    pruned = prune_tool_results(messages)
    assert pruned == messages, "a 4,000-char result was changed"


def test_prune_trims_a_result_one_char_over_to_head_and_tail() -> None:
    # Given an old result of 4,001 chars
    messages = _turn("a", 4_001) + _recent()
    original = messages[2].tool_results[0].content
    # When pruned
    pruned = prune_tool_results(messages)
    # Then it keeps its first and last 1,500 chars around a marker for the 1,001 cut
    result = pruned[2].tool_results[0]
    assert result.content == original[:1500] + omitted_marker(1001) + original[-1500:]
    assert "[... 1001 chars omitted ...]" in result.content
    assert result.tool_call_id == "a0"


def test_prune_trims_when_old_output_is_exactly_the_total_budget() -> None:
    # Given old results totalling exactly 50,000 chars
    messages = _turn("a", 30_000, 20_000) + _recent()
    # When pruned
    old = _old_results(prune_tool_results(messages))
    # Then they are trimmed, not cleared
    expected = [3000 + len(omitted_marker(27_000)), 3000 + len(omitted_marker(17_000))]
    assert [len(r.content) for r in old] == expected


def test_prune_clears_every_old_result_one_char_over_the_total_budget() -> None:
    # Given old results totalling 50,001 chars, small ones included
    messages = _turn("a", 30_000, 19_901) + _turn("b", 100) + _recent()
    # When pruned
    old = _old_results(prune_tool_results(messages))
    # Then every one is replaced by a marker naming its size
    assert [r.content for r in old] == [
        cleared_marker(30_000),
        cleared_marker(19_901),
        cleared_marker(100),
    ]
    assert old[0].content == "[tool result cleared to save context: 30000 chars]"


def test_prune_leaves_a_result_shorter_than_its_marker_when_clearing() -> None:
    messages = _turn("a", 60_000, 5) + _recent()
    old = _old_results(prune_tool_results(messages))
    assert old[1].content == _body(5)


def test_prune_never_touches_the_last_three_turns() -> None:
    # Given old results far over every limit and three recent turns with big results
    messages = _turn("a", 80_000) + _recent()
    # When pruned
    pruned = prune_tool_results(messages)
    # Then the recent turns are the very same objects
    tail = len(_recent())
    assert all(x is y for x, y in zip(pruned[-tail:], messages[-tail:], strict=True))
    assert pruned[2].tool_results[0].content == cleared_marker(80_000)


def test_prune_with_fewer_turns_than_keep_turns_changes_nothing() -> None:
    messages = _turn("a", 80_000) + _turn("b", 9_000)
    assert prune_tool_results(messages) == messages


def test_prune_keeps_ids_order_and_error_flags() -> None:
    # Given an old tool message with several results, one an error
    calls = tuple(ToolCall(id=f"c{i}", name="bash") for i in range(3))
    results = (
        ToolResult(tool_call_id="c2", content="e" * 9_000, is_error=True),
        ToolResult(tool_call_id="c0", content="ok"),
        ToolResult(tool_call_id="c1", content="f" * 4_500),
    )
    messages = [Message.user("go"), Message.assistant("", calls), Message.tool(*results)]
    messages += _recent()
    # When pruned
    pruned = prune_tool_results(messages)
    # Then the tool message keeps the shape the provider expects
    assert [c.id for c in pruned[1].tool_calls] == ["c0", "c1", "c2"]
    assert [(r.tool_call_id, r.is_error) for r in pruned[2].tool_results] == [
        ("c2", True),
        ("c0", False),
        ("c1", False),
    ]


def test_prune_does_not_change_its_input_and_is_idempotent() -> None:
    messages = _turn("a", 9_000) + _turn("b", 100_000) + _recent()
    snapshot = [m.model_copy(deep=True) for m in messages]
    once = prune_tool_results(messages)
    assert messages == snapshot, "pruning changed the caller's list"
    assert prune_tool_results(once) == once
    trimmed = _turn("a", 9_000) + _recent()
    assert prune_tool_results(prune_tool_results(trimmed)) == prune_tool_results(trimmed)


def test_prune_refuses_head_and_tail_longer_than_the_limit() -> None:
    with pytest.raises(ValueError, match="keep_head"):
        prune_tool_results([], max_result_chars=1000, keep_head=600, keep_tail=600)
