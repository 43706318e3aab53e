"""Assembling turns from stream events: split arguments, usage, stop reasons."""

from __future__ import annotations

import pytest

from harness.llm.anthropic import AnthropicProvider
from harness.llm.errors import TransientModelError
from harness.llm.openai import OpenAIProvider
from harness.llm.provider import ModelProvider
from harness.llm.streaming import parse_arguments
from harness.llm.types import Message, ToolSpec, Usage
from tests.fakes.model_server import ModelServer, Reply, ScriptedCall

SEARCH = ToolSpec(name="search", description="Search.", parameters={"type": "object"})
ARGUMENTS = {"query": 'caf\u00e9 "quoted" {braces}', "limit": 3, "filters": {"lang": ["fr"]}}


def test_provider_assembles_tool_arguments_split_into_one_character_pieces(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    # Given a model that streams each tool call's arguments one character per delta
    model_server.script(
        Reply.tools(
            ScriptedCall("search", ARGUMENTS), ScriptedCall("search", {"query": "b"}), chunk=1
        )
    )

    # When the turn is assembled
    turn = provider.complete(system="s", messages=[Message.user("find")], tools=[SEARCH])

    # Then every call has its own complete arguments, in order
    assert [c.arguments for c in turn.tool_calls] == [ARGUMENTS, {"query": "b"}]
    assert len({c.id for c in turn.tool_calls}) == 2, "tool call ids should be distinct"
    assert turn.stop_reason == "tool_use"


def test_provider_assembles_text_split_across_deltas(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    model_server.script(Reply.answer("Hello, w\u00f6rld! " * 20, chunk=3))

    turn = provider.complete(system="s", messages=[Message.user("hi")])

    assert turn.text == "Hello, w\u00f6rld! " * 20
    assert turn.stop_reason == "end"
    assert turn.tool_calls == ()


def test_anthropic_provider_reports_usage_and_cost(
    anthropic_provider: AnthropicProvider, model_server: ModelServer
) -> None:
    model_server.script(
        Reply.answer(
            "ok", input_tokens=1000, output_tokens=500, cache_read_tokens=4000, cache_write_tokens=0
        )
    )

    turn = anthropic_provider.complete(system="s", messages=[Message.user("hi")])

    assert turn.usage == Usage(input_tokens=1000, output_tokens=500, cache_read_tokens=4000)
    # claude-sonnet-5-5: $2 in, $10 out, $0.20 cache read per million tokens
    assert turn.cost_usd == pytest.approx((1000 * 2 + 500 * 10 + 4000 * 0.20) / 1e6)


def test_openai_provider_reads_usage_from_the_chunk_without_choices(
    openai_provider: OpenAIProvider, model_server: ModelServer
) -> None:
    # Given a reply whose prompt was partly served from the cache
    model_server.script(
        Reply.answer("ok", input_tokens=300, cache_read_tokens=700, output_tokens=50)
    )

    turn = openai_provider.complete(system="s", messages=[Message.user("hi")])

    # Then cached tokens are split out of prompt_tokens
    assert turn.usage == Usage(input_tokens=300, cache_read_tokens=700, output_tokens=50)
    assert turn.cost_usd > 0.0


def test_provider_reports_a_turn_cut_off_by_max_tokens(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    model_server.script(Reply.answer("It was a dark and", truncated=True))

    turn = provider.complete(system="s", messages=[Message.user("story")], max_tokens=5)

    assert turn.stop_reason == "max_tokens"
    assert turn.text == "It was a dark and"
    # a loopback OpenAI-compatible server gets max_tokens too, the field local servers enforce
    assert model_server.requests[0].body["max_tokens"] == 5


def test_provider_drops_a_tool_call_cut_off_by_max_tokens(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    # Given a turn whose second tool call's arguments were cut off halfway
    model_server.script(
        Reply.tools(
            ScriptedCall("search", {"query": "a"}),
            ScriptedCall("search", {"query": "a long query"}),
            truncated=True,
        )
    )

    turn = provider.complete(system="s", messages=[Message.user("find")], tools=[SEARCH])

    # Then only the finished call is offered to run
    assert turn.stop_reason == "max_tokens"
    assert [c.arguments for c in turn.tool_calls] == [{"query": "a"}]


def test_parse_arguments_rejects_what_is_not_a_json_object() -> None:
    assert parse_arguments("") == {}
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments('{"a": ') is None
    assert parse_arguments("[1, 2]") is None


def test_anthropic_provider_raises_transient_when_stream_ends_early(
    anthropic_provider: AnthropicProvider, model_server: ModelServer
) -> None:
    # Given a stream that breaks off after message_start with an in-stream error event
    model_server.script(Reply.error(529, mid_stream=True))

    with pytest.raises(TransientModelError) as caught:
        anthropic_provider.complete(system="s", messages=[Message.user("hi")])

    assert "overloaded_error" in str(caught.value)


def test_provider_raises_transient_when_the_connection_drops_mid_stream(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    # Given a server that hangs up before the turn is finished
    model_server.script(Reply.answer("a long answer that never ends", chunk=2, disconnect=True))

    # Then the half-read turn is not passed off as complete
    with pytest.raises(TransientModelError):
        provider.complete(system="s", messages=[Message.user("hi")])


def test_provider_hands_each_text_piece_to_on_text_in_order(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    # Given a model that streams its answer three characters at a time
    answer = "Streaming, w\u00f6rd by w\u00f6rd. " * 5
    model_server.script(Reply.answer(answer, chunk=3))
    pieces: list[str] = []

    # When the turn is asked for with a text sink
    turn = provider.complete(system="s", messages=[Message.user("hi")], on_text=pieces.append)

    # Then the sink saw the answer piece by piece, and the pieces make the turn's text
    assert len(pieces) > 1, "the text should arrive in several pieces"
    assert "".join(pieces) == turn.text == answer


def test_provider_gives_on_text_no_tool_arguments(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    # Given a model that only calls a tool
    model_server.script(Reply.tools(ScriptedCall("search", ARGUMENTS), chunk=2))
    pieces: list[str] = []

    # When the turn streams
    provider.complete(
        system="s", messages=[Message.user("find")], tools=[SEARCH], on_text=pieces.append
    )

    # Then no argument fragment reached the text sink
    assert "".join(pieces) == "", f"tool arguments leaked into the text: {pieces!r}"
