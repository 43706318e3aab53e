"""The neutral conversation types round-trip through JSON and refuse malformed messages."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from harness.llm.pricing import cost_usd, price_for
from harness.llm.types import (
    AssistantTurn,
    Message,
    ReasoningBlock,
    ToolCall,
    ToolResult,
    Usage,
)

TURN = AssistantTurn(
    text="Checking.",
    tool_calls=(ToolCall(id="toolu_1", name="search", arguments={"q": "x", "n": [1, 2]}),),
    reasoning=(
        ReasoningBlock(
            provider="anthropic",
            model="claude-sonnet-5-5",
            block={"type": "thinking", "thinking": "hm", "signature": "abc"},
        ),
    ),
    usage=Usage(input_tokens=10, output_tokens=5, cache_read_tokens=100, cache_write_tokens=7),
    stop_reason="tool_use",
    model="claude-sonnet-5-5",
    cost_usd=0.001,
)


def test_assistant_turn_round_trips_through_json_text() -> None:
    line = json.dumps(TURN.model_dump(mode="json"))

    assert AssistantTurn.model_validate(json.loads(line)) == TURN


def test_message_round_trips_through_json_text() -> None:
    messages = [
        Message.user("hi"),
        TURN.to_message(),
        Message.tool(ToolResult(tool_call_id="toolu_1", content="boom", is_error=True)),
    ]
    for message in messages:
        assert message is not None
        line = json.dumps(message.model_dump(mode="json"))
        assert Message.model_validate(json.loads(line)) == message


@pytest.mark.parametrize(
    "fields",
    [
        {"role": "user", "text": "  "},
        {"role": "assistant"},
        {"role": "tool", "text": "x"},
        {"role": "user", "text": "x", "tool_results": [{"tool_call_id": "a", "content": ""}]},
    ],
)
def test_message_refuses_a_malformed_shape(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Message.model_validate(fields)


def test_assistant_turn_with_only_whitespace_has_no_message() -> None:
    turn = AssistantTurn(text=" \n", stop_reason="end", model="m")

    assert turn.to_message() is None


def test_pricing_costs_known_models_and_dated_snapshots() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)

    assert cost_usd("gpt-5.4-mini", usage) == pytest.approx(0.75 + 4.50)
    assert price_for("gpt-5.4-mini-2026-03-17") == price_for("gpt-5.4-mini")
    assert price_for("gpt-5.4-2026-03-05") == price_for("gpt-5.4")


def test_pricing_gives_zero_for_unknown_models() -> None:
    assert cost_usd("local-llama", Usage(input_tokens=5, output_tokens=5)) == 0.0
