"""The Anthropic request prefix (tools + stable system) stays byte-identical across turns."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.llm.anthropic import AnthropicProvider
from harness.llm.provider import system_blocks
from harness.llm.types import Message, SystemBlock, ToolResult, ToolSpec
from tests.fakes.model_server import ModelServer, RecordedRequest, Reply

TOOLS = [
    ToolSpec(
        name="read_file",
        description="Read a file.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"],
        },
    ),
    ToolSpec(name="list_dir", description="List a folder.", parameters={"type": "object"}),
]
STABLE = [SystemBlock(text="You are Harness."), SystemBlock(text="Tools: use them well.")]


def _system(now: str) -> list[SystemBlock]:
    return [*STABLE, SystemBlock(text=f"Current time: {now}", volatile=True)]


def _cached_prefix(request: RecordedRequest) -> bytes:
    """The bytes the cache breakpoint covers: tools, then system blocks up to the breakpoint,
    as they appear on the wire (json keeps the key order of the raw body)."""
    body: dict[str, Any] = json.loads(request.raw)
    marked = [i for i, b in enumerate(body["system"]) if "cache_control" in b]
    assert len(marked) == 1, f"expected one cache breakpoint in system, got {body['system']}"
    prefix = {"tools": body["tools"], "system": body["system"][: marked[0] + 1]}
    return json.dumps(prefix, ensure_ascii=False).encode()


def test_anthropic_provider_keeps_the_cached_prefix_identical_when_only_the_time_changes(
    anthropic_provider: AnthropicProvider, model_server: ModelServer
) -> None:
    # Given two turns of one conversation, an hour apart
    model_server.script(Reply.tool("list_dir", {}), Reply.answer("done"))
    history = [Message.user("What is here?")]
    turn = anthropic_provider.complete(system=_system("09:00"), messages=history, tools=TOOLS)
    message = turn.to_message()
    assert message is not None
    history += [message, Message.tool(ToolResult(tool_call_id=turn.tool_calls[0].id, content="a"))]

    # When the second turn is sent with only the volatile block changed
    anthropic_provider.complete(system=_system("10:00"), messages=history, tools=TOOLS)

    # Then the prefix up to the breakpoint is byte-identical, and the time comes after it
    first, second = model_server.requests
    assert _cached_prefix(first) == _cached_prefix(second)
    system = second.body["system"]
    assert system[1]["cache_control"] == {"type": "ephemeral"}
    assert system[-1] == {"type": "text", "text": "Current time: 10:00"}
    assert first.body["messages"] == second.body["messages"][:1]


def test_system_blocks_refuse_a_stable_block_after_a_volatile_one() -> None:
    with pytest.raises(ValueError, match="stable system blocks must come before"):
        system_blocks([SystemBlock(text="now", volatile=True), SystemBlock(text="rules")])


def test_anthropic_provider_marks_a_plain_string_system_prompt_as_cacheable(
    anthropic_provider: AnthropicProvider, model_server: ModelServer
) -> None:
    model_server.script(Reply.answer("ok"))

    anthropic_provider.complete(system="You are Harness.", messages=[Message.user("hi")])

    assert model_server.requests[0].body["system"] == [
        {"type": "text", "text": "You are Harness.", "cache_control": {"type": "ephemeral"}}
    ]
