"""OpenAI-compatible local servers: the token-limit field, and tool calls streamed in the
shapes Ollama, vLLM and llama.cpp's server send them (derived from their source; see
`tests.fakes.compat_chunks`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.llm.errors import PermanentModelError
from harness.llm.openai import OpenAIProvider
from harness.llm.token_field import default_field, forget_learned
from harness.llm.types import Message
from tests.fakes import compat_chunks
from tests.fakes.model_server import ModelServer, Reply

HELLO = [Message.user("What is the weather in Paris?")]


@pytest.fixture(autouse=True)
def _fresh_fallbacks() -> Iterator[None]:
    forget_learned()
    yield
    forget_learned()


def _provider(server: ModelServer, **options: object) -> OpenAIProvider:
    return OpenAIProvider(
        api_key=server.api_key,
        base_url=server.openai_url,
        max_tokens=321,
        timeout=10.0,
        **options,  # type: ignore[arg-type]
    )


def test_default_field_is_max_completion_tokens_only_for_the_official_api() -> None:
    assert default_field("https://api.openai.com/v1") == "max_completion_tokens"
    assert default_field("http://localhost:11434/v1") == "max_tokens"
    assert default_field("http://gpu-box:8000/v1") == "max_tokens"


def test_openai_provider_sends_max_tokens_to_a_local_server_by_default(
    model_server: ModelServer,
) -> None:
    # Given a provider pointed at a local server with no field configured
    model_server.script(Reply.answer("sunny"))
    provider = _provider(model_server)

    # When it completes
    provider.complete(system="s", messages=HELLO)

    # Then the limit travels as max_tokens, which Ollama and llama.cpp enforce
    body = model_server.requests[0].body
    assert body.get("max_tokens") == 321, f"expected max_tokens=321 in {body}"
    assert "max_completion_tokens" not in body
    provider.close()


def test_openai_provider_falls_back_once_on_a_400_about_the_field_and_remembers_it() -> None:
    # Given a strict server that rejects max_completion_tokens, configured explicitly
    with ModelServer(unknown_fields=frozenset({"max_completion_tokens"})) as server:
        server.script(Reply.answer("one"), Reply.answer("two"))
        provider = _provider(server, max_tokens_field="max_completion_tokens")

        # When two calls are made (through two provider instances, as after a rebuild)
        first = provider.complete(system="s", messages=HELLO)
        again = _provider(server, max_tokens_field="max_completion_tokens")
        second = again.complete(system="s", messages=HELLO)

        # Then the first call retried with max_tokens, and the second went straight to it
        assert (first.text, second.text) == ("one", "two")
        sent = [
            ("max_tokens" in r.body, "max_completion_tokens" in r.body) for r in server.requests
        ]
        assert sent == [(False, True), (True, False), (True, False)], sent
        provider.close()
        again.close()


def test_openai_provider_does_not_retry_a_400_that_is_not_about_the_field(
    model_server: ModelServer,
) -> None:
    model_server.script(Reply.error(400, "messages: content must be a string"))
    provider = _provider(model_server)

    with pytest.raises(PermanentModelError):
        provider.complete(system="s", messages=HELLO)

    assert len(model_server.requests) == 1, "a plain 400 must not be retried"
    provider.close()


@pytest.mark.parametrize(
    ("chunks", "call_id", "input_tokens"),
    [
        (compat_chunks.ollama(), "call_k3x9q2m7", 212),
        (compat_chunks.ollama_2024(), "call_7hx2m4qa", 0),
    ],
    ids=["ollama", "ollama-2024"],
)
def test_openai_provider_reads_an_ollama_tool_call_sent_whole(
    model_server: ModelServer,
    chunks: tuple[dict[str, object], ...],
    call_id: str,
    input_tokens: int,
) -> None:
    # Given Ollama's shape: the call whole in one chunk (the 2024 one: no index, "stop")
    model_server.script(Reply.recorded(*chunks))
    provider = _provider(model_server)

    # When the turn is read
    turn = provider.complete(system="s", messages=HELLO)

    # Then it is a tool call to run, not an answer
    assert turn.stop_reason == "tool_use"
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        (call_id, "get_weather", {"city": "Paris"})
    ]
    assert turn.usage.input_tokens == input_tokens
    provider.close()


def test_openai_provider_reads_a_vllm_tool_call_in_fragments(model_server: ModelServer) -> None:
    # Given vLLM's hermes shape: a name chunk without arguments, then index-only fragments
    model_server.script(Reply.recorded(*compat_chunks.vllm()))
    provider = _provider(model_server)

    # When the turn is read
    turn = provider.complete(system="s", messages=HELLO)

    # Then the fragments make one call with its id
    assert turn.stop_reason == "tool_use"
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert turn.tool_calls[0].id.startswith("chatcmpl-tool-")
    assert (turn.usage.input_tokens, turn.usage.cache_read_tokens) == (305, 0)
    provider.close()


def test_openai_provider_reads_llama_cpp_parallel_calls_and_its_cache_timings(
    model_server: ModelServer,
) -> None:
    # Given llama-server's shape: headers with ids, index-only fragments, timings at the end
    model_server.script(Reply.recorded(*compat_chunks.llama_cpp()))
    provider = _provider(model_server)

    # When the turn is read
    turn = provider.complete(system="s", messages=HELLO)

    # Then both calls come out whole, and the cached prompt tokens (timings.cache_n) count
    calls = [(c.id[:4], c.arguments) for c in turn.tool_calls]
    assert calls == [("Xq2L", {"city": "Paris"}), ("Rk7T", {"city": "Rome"})], calls
    assert (turn.usage.input_tokens, turn.usage.cache_read_tokens) == (20, 380)
    provider.close()


def test_openai_provider_separates_parallel_calls_that_share_index_zero(
    model_server: ModelServer,
) -> None:
    model_server.script(Reply.recorded(*compat_chunks.same_index_parallel_calls()))
    provider = _provider(model_server)

    turn = provider.complete(system="s", messages=HELLO)

    calls = [(c.id, c.arguments) for c in turn.tool_calls]
    assert calls == [("a1B2c3D4", {"city": "Paris"}), ("e5F6g7H8", {"city": "Rome"})], calls
    provider.close()


def test_openai_provider_reads_calls_from_a_server_that_never_sends_an_index(
    model_server: ModelServer,
) -> None:
    model_server.script(Reply.recorded(*compat_chunks.no_index_fragments()))
    provider = _provider(model_server)

    turn = provider.complete(system="s", messages=HELLO)

    calls = [(c.id, c.arguments) for c in turn.tool_calls]
    assert calls == [("call_1", {"path": "a.txt"}), ("call_2", {"path": "b.txt"})], calls
    provider.close()
