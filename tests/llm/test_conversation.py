"""A multi-step tool conversation through the real SDKs against the scripted model server."""

from __future__ import annotations

import json

from harness.llm.anthropic import AnthropicProvider
from harness.llm.openai import OpenAIProvider
from harness.llm.provider import ModelProvider
from harness.llm.types import AssistantTurn, Message, SystemBlock, ToolResult, ToolSpec
from tests.fakes.model_server import ModelServer, Reply, ScriptedCall

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
TIME = ToolSpec(name="get_time", description="Current time.", parameters={"type": "object"})
SYSTEM = [
    SystemBlock(text="You are a helpful agent."),
    SystemBlock(text="Now: 09:00", volatile=True),
]


def _as_message(turn: AssistantTurn) -> Message:
    message = turn.to_message()
    assert message is not None, f"expected a turn with content, got {turn!r}"
    return message


def _answer(turn: AssistantTurn, content: str) -> Message:
    return Message.tool(*(ToolResult(tool_call_id=c.id, content=content) for c in turn.tool_calls))


def _run_two_tool_steps(provider: ModelProvider, server: ModelServer) -> list[Message]:
    """Given a model that calls two tools, then one more, then answers; run the loop."""
    server.script(
        Reply.tools(
            ScriptedCall("get_weather", {"city": "Paris"}),
            ScriptedCall("get_time"),
            text="Let me look.",
        ),
        Reply.tool("get_weather", {"city": "Lyon"}),
        Reply.answer("Sunny in Paris and Lyon."),
    )
    history = [Message.user("Weather in Paris and Lyon?")]
    for _ in range(3):
        turn = provider.complete(system=SYSTEM, messages=history, tools=[WEATHER, TIME])
        history.append(_as_message(turn))
        if turn.stop_reason != "tool_use":
            break
        results = [ToolResult(tool_call_id=c.id, content=f"ok {c.name}") for c in turn.tool_calls]
        history.append(Message.tool(*results))
    return history


def test_anthropic_provider_runs_a_multi_step_tool_conversation(
    anthropic_provider: AnthropicProvider, model_server: ModelServer
) -> None:
    history = _run_two_tool_steps(anthropic_provider, model_server)

    assert history[-1] == Message.assistant("Sunny in Paris and Lyon.")
    assert model_server.rejections == [], "the fake rejected a conversation the SDK sent"
    first_calls = history[1].tool_calls
    assert [(c.name, c.arguments) for c in first_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {}),
    ]
    second = model_server.requests[1].body
    assert second["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": first_calls[0].id, "content": "ok get_weather"},
            {
                "type": "tool_result",
                "tool_use_id": first_calls[1].id,
                "content": "ok get_time",
                "cache_control": {"type": "ephemeral"},  # the conversation's cache breakpoint
            },
            # the volatile system text rides after the breakpoint, outside the cached prefix
            {"type": "text", "text": "<system-reminder>\nNow: 09:00\n</system-reminder>"},
        ],
    }, "both tool results should travel as tool_result blocks in one user message"
    assert all(r.body["stream"] is True for r in model_server.requests)


def test_openai_provider_runs_a_multi_step_tool_conversation(
    openai_provider: OpenAIProvider, model_server: ModelServer
) -> None:
    history = _run_two_tool_steps(openai_provider, model_server)

    assert history[-1] == Message.assistant("Sunny in Paris and Lyon.")
    assert model_server.rejections == [], "the fake rejected a conversation the SDK sent"
    first_calls = history[1].tool_calls
    second = model_server.requests[1].body
    assert second["messages"][0] == {"role": "system", "content": "You are a helpful agent."}
    # the volatile text comes last, so the system message and history stay a stable prefix
    assert second["messages"][-1] == {
        "role": "user",
        "content": "<system-reminder>\nNow: 09:00\n</system-reminder>",
    }
    assert second["messages"][2]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": json.dumps({"city": "Paris"}),
    }
    assert second["messages"][3:-1] == [
        {"role": "tool", "tool_call_id": first_calls[0].id, "content": "ok get_weather"},
        {"role": "tool", "tool_call_id": first_calls[1].id, "content": "ok get_time"},
    ], "each tool result should be its own role=tool message"
    assert second["stream_options"] == {"include_usage": True}


def test_anthropic_provider_sends_thinking_blocks_back_unchanged(
    anthropic_provider: AnthropicProvider, model_server: ModelServer
) -> None:
    # Given a model with thinking on, whose tool-use turn must come back with its thinking
    model_server.script(
        Reply.tool("get_time", thinking="The user wants the time."), Reply.answer("09:00")
    )
    history = [Message.user("What time is it?")]
    turn = anthropic_provider.complete(system="Be brief.", messages=history, tools=[TIME])
    history += [_as_message(turn), _answer(turn, "09:00")]

    # When the loop continues
    final = anthropic_provider.complete(system="Be brief.", messages=history, tools=[TIME])

    # Then the fake (which checks signatures, like the real API) accepted the history
    assert final.text == "09:00", f"rejected: {model_server.rejections}"
    sent = model_server.requests[1].body["messages"][1]["content"][0]
    assert sent["type"] == "thinking" and sent["thinking"] == "The user wants the time."


def test_anthropic_provider_drops_reasoning_from_another_model(
    model_server: ModelServer, anthropic_provider: AnthropicProvider
) -> None:
    # Given a history whose reasoning came from another model
    model_server.script(Reply.tool("get_time", thinking="hmm"), Reply.answer("done"))
    turn = anthropic_provider.complete(system="s", messages=[Message.user("hi")], tools=[TIME])
    other = AnthropicProvider(
        api_key=model_server.api_key, base_url=model_server.url, model="claude-haiku-5-5"
    )
    history = [Message.user("hi"), _as_message(turn), _answer(turn, "09:00")]

    # When another model continues it
    try:
        other.complete(system="s", messages=history, tools=[TIME])
    finally:
        other.close()

    # Then no thinking block was sent to it
    types = [b["type"] for b in model_server.requests[1].body["messages"][1]["content"]]
    assert types == ["tool_use"]
