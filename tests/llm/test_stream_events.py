"""Streamed events read as plain JSON: each provider, on its blocking and its async path,
takes the SSE as the real services send it (comments, pings, events split across reads),
and calls an event that is not JSON, or not of its type's shape, a malformed stream."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from harness.llm.anthropic import AnthropicProvider
from harness.llm.errors import TransientModelError
from harness.llm.openai import OpenAIProvider
from harness.llm.provider import AsyncModelProvider, ModelProvider
from harness.llm.types import AssistantTurn, Message
from tests.fakes.model_server import ModelServer, Reply

HELLO = [Message.user("hello")]


@pytest.fixture(params=["blocking", "async"])
def path(request: pytest.FixtureRequest) -> str:
    """Each way of calling a provider: `complete`, and `complete_async` (the gateway's)."""
    value: str = request.param
    return value


def _call(provider: ModelProvider, path: str, pieces: list[str] | None = None) -> AssistantTurn:
    sink = pieces.append if pieces is not None else None
    if path == "blocking":
        return provider.complete(system="s", messages=HELLO, on_text=sink)
    assert isinstance(provider, AsyncModelProvider)
    return asyncio.run(provider.complete_async(system="s", messages=HELLO, on_text=sink))


def _assert_hello_tea(pieces: list[str], turn: AssistantTurn, model: str) -> None:
    """The three pieces of "Hello, tea" reached `on_text` in order and make a finished turn
    answered by `model`."""
    assert pieces == ["Hel", "lo, ", "tea"], f"text pieces out of order or lost: {pieces}"
    assert turn.text == "Hello, tea" and turn.stop_reason == "end", turn
    assert turn.model == model


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


def _chunk(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data)}\n\n".encode()


def _text_delta(text: str) -> bytes:
    delta = {"type": "text_delta", "text": text}
    event = {"type": "content_block_delta", "index": 0, "delta": delta}
    return _event("content_block_delta", event)


ANTHROPIC_START = _event(
    "message_start",
    {
        "type": "message_start",
        "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-served",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {
                "input_tokens": 11, "output_tokens": 1,
                "cache_read_input_tokens": 5, "cache_creation_input_tokens": 3,
            },
        },
    },
)  # fmt: skip
ANTHROPIC_TEXT_START = _event(
    "content_block_start",
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
)
ANTHROPIC_END = _event(
    "message_delta",
    {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 7},
    },
) + _event("message_stop", {"type": "message_stop"})


def test_anthropic_stream_with_comments_pings_and_split_events_is_assembled(
    anthropic_provider: AnthropicProvider, model_server: ModelServer, path: str
) -> None:
    # Given a stream with a comment, a ping, CRLF line ends and a delta split mid-JSON
    split = _text_delta("lo, ")
    model_server.script(
        Reply.sse(
            b": keep-alive\n\n",
            ANTHROPIC_START,
            _event("ping", {"type": "ping"}),
            ANTHROPIC_TEXT_START,
            _text_delta("Hel").replace(b"\n", b"\r\n"),
            split[:30],
            split[30:],
            _text_delta("tea"),
            ANTHROPIC_END,
            pace=0.005,
        )
    )
    pieces: list[str] = []
    # When the provider reads it
    turn = _call(anthropic_provider, path, pieces)
    # Then the text arrived in order, and the usage, stop reason and model are the stream's
    _assert_hello_tea(pieces, turn, "claude-served")
    usage = turn.usage
    assert (usage.input_tokens, usage.output_tokens) == (11, 7)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (5, 3)


def test_openai_stream_with_comments_and_split_chunks_is_assembled(
    openai_provider: OpenAIProvider, model_server: ModelServer, path: str
) -> None:
    # Given a stream with a comment, a chunk split mid-JSON and cached tokens in its usage
    def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"index": 0, "delta": delta, "finish_reason": finish}

    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-served"}
    split = _chunk({**base, "choices": [choice({"content": "lo, "})]})
    usage = {
        "prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24,
        "prompt_tokens_details": {"cached_tokens": 8},
    }  # fmt: skip
    model_server.script(
        Reply.sse(
            b": OPENROUTER PROCESSING\n\n",
            _chunk({**base, "choices": [choice({"role": "assistant", "content": "Hel"})]}),
            split[:40],
            split[40:],
            _chunk({**base, "choices": [choice({"content": "tea"}, "stop")]}),
            _chunk({**base, "choices": [], "usage": usage}),
            b"data: [DONE]\n\n",
            pace=0.005,
        )
    )
    pieces: list[str] = []
    # When the provider reads it
    turn = _call(openai_provider, path, pieces)
    # Then the text arrived in order and the cached tokens are not counted as input
    _assert_hello_tea(pieces, turn, "gpt-served")
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (12, 4)
    assert turn.usage.cache_read_tokens == 8


def test_openai_provider_reads_llama_cpp_cache_timings(
    openai_provider: OpenAIProvider, model_server: ModelServer, path: str
) -> None:
    # Given a llama.cpp-style last chunk: usage without details, `timings.cache_n` beside it
    model_server.script(
        Reply.recorded(
            {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]},
            {
                "choices": [],
                "usage": {"prompt_tokens": 30, "completion_tokens": 2},
                "timings": {"cache_n": 25},
            },
        )
    )
    # When the provider reads it
    turn = _call(openai_provider, path)
    # Then the cached prompt tokens come from the timings
    assert turn.usage.cache_read_tokens == 25 and turn.usage.input_tokens == 5


NOT_JSON = {
    "anthropic": (ANTHROPIC_START, b"event: content_block_delta\ndata: {not json\n\n"),
    "openai": (b"data: {not json\n\n",),
}
WRONG_SHAPE = {
    "anthropic": (
        ANTHROPIC_START,
        _event("content_block_delta", {"type": "content_block_delta", "delta": {}}),
    ),
    "openai": (_chunk({"model": "m", "choices": 5}),),
}


@pytest.mark.parametrize("stream", [NOT_JSON, WRONG_SHAPE], ids=["not-json", "wrong-shape"])
def test_provider_calls_a_bad_event_a_malformed_stream(
    provider: ModelProvider, model_server: ModelServer, path: str, stream: dict[str, Any]
) -> None:
    # Given a stream with an event that is not JSON, or not of its type's shape
    model_server.script(Reply.sse(*stream[provider.name]))
    # When the provider reads it
    # Then the call fails as a transient malformed stream, to be tried again
    with pytest.raises(TransientModelError, match="malformed stream"):
        _call(provider, path)


def test_anthropic_provider_raises_an_in_stream_overloaded_error_as_transient(
    anthropic_provider: AnthropicProvider, model_server: ModelServer, path: str
) -> None:
    # Given a stream that starts and then carries an `overloaded_error` event
    model_server.script(Reply.error(529, "Overloaded", mid_stream=True))
    # When the provider reads it
    # Then the call fails as transient, naming the in-stream error
    with pytest.raises(TransientModelError, match="in-stream overloaded_error: Overloaded"):
        _call(anthropic_provider, path)


def test_anthropic_provider_keeps_a_thinking_block_as_sent(
    anthropic_provider: AnthropicProvider, model_server: ModelServer, path: str
) -> None:
    # Given a model that thinks before it answers
    model_server.script(Reply.answer("ok", thinking="Let me see."))
    # When the provider reads the turn
    turn = _call(anthropic_provider, path)
    # Then the thinking block is kept whole, signature included, for the next request
    [reasoning] = turn.reasoning
    assert set(reasoning.block) == {"type", "thinking", "signature"}, reasoning.block
    assert reasoning.block["thinking"] == "Let me see." and reasoning.block["signature"]


def test_async_call_cancelled_mid_stream_abandons_it(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    # Given a model that stalls after its first event
    model_server.script(Reply.answer("never", delay=60))
    assert isinstance(provider, AsyncModelProvider)

    async def cancel_mid_stream() -> None:
        task = asyncio.create_task(provider.complete_async(system="s", messages=HELLO))
        await asyncio.to_thread(model_server.wait_until_stalled)
        # When the awaiting task is cancelled
        task.cancel()
        # Then it ends cancelled, without waiting for the stalled stream
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=10)

    asyncio.run(cancel_mid_stream())
