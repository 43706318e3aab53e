"""`tool_choice` through the real SDKs: each provider's wire form, nothing when unset, and a
choice that cannot be honoured refused before any request."""

from __future__ import annotations

from typing import Any

import pytest

from harness.llm.provider import ModelProvider
from harness.llm.tool_choice import check_tool_choice
from harness.llm.types import Message, ToolSpec
from tests.fakes.model_server import ModelServer, Reply

ROUTE = ToolSpec(name="route", description="Pick the next agent.", parameters={"type": "object"})
TIME = ToolSpec(name="get_time", description="Current time.", parameters={"type": "object"})
HELLO = [Message.user("hi")]

WIRE: dict[str, dict[str, Any]] = {
    "anthropic": {
        "auto": {"type": "auto"},
        "any": {"type": "any"},
        "required": {"type": "any"},
        "none": {"type": "none"},
        "route": {"type": "tool", "name": "route"},
    },
    "openai": {
        "auto": "auto",
        "any": "required",
        "required": "required",
        "none": "none",
        "route": {"type": "function", "function": {"name": "route"}},
    },
}


def _sent(server: ModelServer) -> dict[str, Any]:
    assert server.rejections == [], f"the server refused the request: {server.rejections}"
    body: dict[str, Any] = server.requests[-1].body
    return body


@pytest.mark.parametrize("choice", ["auto", "any", "required", "none", "route"])
def test_tool_choice_is_sent_in_each_providers_wire_form(
    provider: ModelProvider, model_server: ModelServer, choice: str
) -> None:
    # Given a model that calls the tool
    model_server.script(Reply.tool("route", {"next": "stop"}))
    # When a call sets tool_choice
    provider.complete(system="s", messages=HELLO, tools=[ROUTE, TIME], tool_choice=choice)
    # Then the body carries the provider's form of it
    expected = WIRE[provider.name][choice]
    assert _sent(model_server).get("tool_choice") == expected, (
        f"{provider.name}: expected tool_choice {expected!r} for {choice!r}"
    )


def test_tool_choice_unset_sends_no_field_and_the_same_bytes(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    # Given two calls, one without tool_choice and one with None
    model_server.script(Reply.answer("a"), Reply.answer("b"))
    provider.complete(system="s", messages=HELLO, tools=[ROUTE])
    provider.complete(system="s", messages=HELLO, tools=[ROUTE], tool_choice=None)
    first, second = model_server.requests
    # Then neither carries the field, and both bodies are byte-identical (the cached prefix)
    assert "tool_choice" not in first.body, f"unexpected field in {first.body}"
    assert first.raw == second.raw, "an unset tool_choice changed the request bytes"


def test_tool_choice_without_tools_sends_nothing_for_auto_and_none(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    # Given a call with no tools (the loop's last iteration) and a choice that forces nothing
    model_server.script(Reply.answer("a"), Reply.answer("b"))
    # When it is made with auto, then none
    provider.complete(system="s", messages=HELLO, tool_choice="auto")
    provider.complete(system="s", messages=HELLO, tool_choice="none")
    # Then no tool_choice is sent (OpenAI refuses one without tools)
    assert [r.body.get("tool_choice") for r in model_server.requests] == [None, None]
    assert model_server.rejections == []


@pytest.mark.parametrize(
    ("choice", "tools"),
    [("delete_everything", [ROUTE, TIME]), ("any", []), ("route", [])],
)
def test_tool_choice_that_cannot_be_honoured_is_refused_before_any_call(
    provider: ModelProvider, model_server: ModelServer, choice: str, tools: list[ToolSpec]
) -> None:
    # Given a tool_choice naming a tool not offered, or forcing a call with no tools
    # When the call is made
    with pytest.raises(ValueError, match="tool_choice"):
        provider.complete(system="s", messages=HELLO, tools=tools, tool_choice=choice)
    # Then nothing reached the server
    assert model_server.requests == [], "a refused tool_choice still sent a request"


def test_check_tool_choice_lets_a_mode_word_win_over_a_tool_of_that_name() -> None:
    # Given a tool that happens to be called "none"
    odd = ToolSpec(name="none", description="x", parameters={"type": "object"})
    # When "none" is the choice, Then it is the mode, not the tool
    assert check_tool_choice("none", [odd, TIME]) == "none"
    assert check_tool_choice("get_time", [odd, TIME]) == "get_time"
