"""The Anthropic request prefix (tools + stable system) stays byte-identical across turns."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.llm.anthropic import AnthropicProvider
from harness.llm.openai import OpenAIProvider
from harness.llm.pricing import cost_usd
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
    assert system[-1]["cache_control"] == {"type": "ephemeral"}
    assert first.body["system"] == system, "the system prompt must not carry the time"
    tail = second.body["messages"][-1]["content"][-1]
    assert tail == {
        "type": "text",
        "text": "<system-reminder>\nCurrent time: 10:00\n</system-reminder>",
    }
    assert first.body["messages"][0]["content"][0] == second.body["messages"][0]["content"][0]


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


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_provider_reads_the_earlier_conversation_from_the_cache_on_a_later_turn(api: str) -> None:
    # Given a server that caches prompts as the real services do, and a long stable prompt
    system = [SystemBlock(text="Rules. " * 800), SystemBlock(text="now", volatile=True)]
    with ModelServer(prompt_cache=True) as server:
        provider = (
            AnthropicProvider(
                api_key=server.api_key, base_url=server.url, model="claude-sonnet-5-5"
            )
            if api == "anthropic"
            else OpenAIProvider(api_key=server.api_key, base_url=server.openai_url)
        )
        history: list[Message] = []
        turns = []
        # When six turns are sent, the time changing on each
        for turn in range(6):
            system[-1] = SystemBlock(text=f"Current time: {turn:02d}:00", volatile=True)
            history.append(Message.user(f"question {turn}: " + "more words " * 40))
            server.script(Reply.answer(f"answer {turn}: " + "some words " * 30))
            result = provider.complete(system=system, messages=history, tools=TOOLS)
            turns.append(result)
            history.append(Message.assistant(result.text))
        provider.close()

    # Then the last turn reads almost all of its prompt from the cache, and is priced so
    usage = turns[-1].usage
    total = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    assert usage.cache_read_tokens / total > 0.8, f"too little read from the cache: {usage}"
    if api == "anthropic":
        assert turns[-1].cost_usd == pytest.approx(cost_usd("claude-sonnet-5-5", usage))
        uncached = usage.model_copy(update={"input_tokens": total, "cache_read_tokens": 0})
        assert turns[-1].cost_usd < cost_usd("claude-sonnet-5-5", uncached) / 2
