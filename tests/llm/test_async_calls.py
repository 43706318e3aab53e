"""`complete_async`: each provider's call on the SDK's async client (the model gateway's),
against the scripted model server, assembled and classified as the blocking call is."""

from __future__ import annotations

import asyncio

import pytest

from harness.llm.errors import ContextOverflowError, TransientModelError
from harness.llm.provider import AsyncModelProvider, ModelProvider
from harness.llm.types import Message, ToolSpec
from tests.fakes.model_server import ModelServer, Reply

SEARCH = ToolSpec(name="search", description="Search.", parameters={"type": "object"})


def _async(provider: ModelProvider) -> AsyncModelProvider:
    assert isinstance(provider, AsyncModelProvider), f"{provider.name} has no complete_async"
    return provider


def test_async_call_streams_text_and_returns_the_turn(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    # Given a model that answers in small pieces
    model_server.script(Reply.answer("Green tea is good.", chunk=3))
    pieces: list[str] = []
    # When the async call is made
    turn = asyncio.run(
        _async(provider).complete_async(
            system="s", messages=[Message.user("tea?")], on_text=pieces.append
        )
    )
    # Then the pieces arrived in order and make the turn's text
    assert turn.text == "Green tea is good." and "".join(pieces) == turn.text
    assert len(pieces) > 1 and turn.stop_reason == "end"


def test_async_call_returns_tool_calls(provider: ModelProvider, model_server: ModelServer) -> None:
    model_server.script(Reply.tool("search", {"query": "tea"}))
    turn = asyncio.run(
        _async(provider).complete_async(system="s", messages=[Message.user("x")], tools=[SEARCH])
    )
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("search", {"query": "tea"})]


def test_async_call_classifies_errors_as_the_blocking_call_does(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    model_server.script(Reply.error(529 if provider.name == "anthropic" else 503))
    with pytest.raises(TransientModelError):
        asyncio.run(_async(provider).complete_async(system="s", messages=[Message.user("x")]))
    model_server.script(Reply.context_overflow())
    with pytest.raises(ContextOverflowError):
        asyncio.run(_async(provider).complete_async(system="s", messages=[Message.user("x")]))
