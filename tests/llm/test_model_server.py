"""The scripted model server answers like the real services, malformed requests included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import ToolParam
from openai.types.chat import ChatCompletionFunctionToolParam

from tests.fakes.model_match import opened_with
from tests.fakes.model_server import ModelServer, Reply
from tests.waiting import wait_until

CLAUDE = "claude-sonnet-5-5"
TOOL: ToolParam = {"name": "f", "description": "d", "input_schema": {"type": "object"}}


@pytest.fixture
def claude(model_server: ModelServer) -> Iterator[anthropic.Anthropic]:
    client = anthropic.Anthropic(api_key="test-key", base_url=model_server.url, max_retries=0)
    yield client
    client.close()


@pytest.fixture
def gpt(model_server: ModelServer) -> Iterator[openai.OpenAI]:
    client = openai.OpenAI(api_key="test-key", base_url=model_server.openai_url, max_retries=0)
    yield client
    client.close()


def test_model_server_answers_anthropic_without_streaming(
    claude: anthropic.Anthropic, model_server: ModelServer
) -> None:
    model_server.script(Reply.tool("f", {"a": 1}, text="Calling."))

    message = claude.messages.create(
        model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "hi"}], tools=[TOOL]
    )

    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.stop_reason == "tool_use"


def test_model_server_answers_openai_without_streaming(
    gpt: openai.OpenAI, model_server: ModelServer
) -> None:
    model_server.script(Reply.answer("hello"))

    completion = gpt.chat.completions.create(
        model="gpt-5.4-mini", messages=[{"role": "user", "content": "hi"}]
    )

    assert completion.choices[0].message.content == "hello"
    assert completion.usage is not None and completion.usage.prompt_tokens == 100


def test_model_server_refuses_anthropic_calls_without_the_key(model_server: ModelServer) -> None:
    client = anthropic.Anthropic(api_key="wrong", base_url=model_server.url, max_retries=0)

    with pytest.raises(anthropic.AuthenticationError):
        client.messages.create(
            model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    client.close()


_USE = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
_RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}


@pytest.mark.parametrize(
    ("messages", "tools", "problem"),
    [
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [_USE]},
                {"role": "user", "content": "and?"},
            ],
            [TOOL],
            "without `tool_result` blocks",
        ),
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": [_RESULT]},
            ],
            [TOOL],
            "unexpected `tool_use_id`",
        ),
        ([{"role": "user", "content": [{"type": "text", "text": ""}]}], [], "non-empty"),
        ([{"role": "user", "content": "hi"}], [{**TOOL, "name": "bad name"}], "pattern"),
        ([{"role": "system", "content": "hi"}], [], "'user' or 'assistant'"),
    ],
    ids=["tool-use-unanswered", "stray-tool-result", "empty-text", "bad-tool-name", "system-role"],
)
def test_model_server_rejects_malformed_anthropic_conversations(
    claude: anthropic.Anthropic,
    model_server: ModelServer,
    messages: list[Any],
    tools: list[Any],
    problem: str,
) -> None:
    model_server.script(Reply.answer("unused"))

    with pytest.raises(anthropic.BadRequestError, match=problem):
        claude.messages.create(model=CLAUDE, max_tokens=10, messages=messages, tools=tools)

    assert len(model_server.rejections) == 1
    # the rejected request did not consume the scripted reply
    assert (
        claude.messages.create(
            model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        .content[0]
        .type
        == "text"
    )


_CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([{"role": "tool", "tool_call_id": "call_1", "content": "ok"}], "preceeding message"),
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": [_CALL]},
                {"role": "user", "content": "and?"},
            ],
            "did not have response messages",
        ),
        (
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}],
            "expected a string",
        ),
    ],
    ids=["tool-without-tool-calls", "tool-calls-unanswered", "assistant-without-content"],
)
def test_model_server_rejects_malformed_openai_conversations(
    gpt: openai.OpenAI, model_server: ModelServer, messages: list[Any], problem: str
) -> None:
    with pytest.raises(openai.BadRequestError, match=problem):
        gpt.chat.completions.create(model="gpt-5.4-mini", messages=messages)

    assert model_server.rejections != []


def test_model_server_rejects_openai_tool_names_outside_the_pattern(
    gpt: openai.OpenAI, model_server: ModelServer
) -> None:
    bad: ChatCompletionFunctionToolParam = {
        "type": "function",
        "function": {"name": "read file", "parameters": {}},
    }

    with pytest.raises(openai.BadRequestError, match="does not match pattern"):
        gpt.chat.completions.create(
            model="gpt-5.4-mini", messages=[{"role": "user", "content": "hi"}], tools=[bad]
        )


def test_model_server_responder_answers_what_nothing_scripted_covers(
    claude: anthropic.Anthropic, model_server: ModelServer
) -> None:
    # Given a responder that echoes the last user message, and one scripted reply
    def echo(api: str, body: Any) -> Reply:
        return Reply.answer(f"{api}: {body['messages'][-1]['content']}")

    model_server.respond_with(echo)
    model_server.script(Reply.answer("scripted first"))
    ask = {"model": CLAUDE, "max_tokens": 10}
    # When two requests arrive
    first = claude.messages.create(**ask, messages=[{"role": "user", "content": "one"}])
    second = claude.messages.create(**ask, messages=[{"role": "user", "content": "two"}])
    # Then the script goes first, and the responder builds the next answer from the request
    assert [first.content[0].text, second.content[0].text] == [  # type: ignore[union-attr]
        "scripted first",
        "anthropic: two",
    ]
    assert model_server.unscripted == 0


def test_model_server_replies_scripted_for_a_conversation_go_to_it_in_any_order(
    claude: anthropic.Anthropic, model_server: ModelServer
) -> None:
    # Given replies scripted for a conversation about tea and one about coffee, and one shared
    model_server.script(Reply.answer("shared"))
    model_server.script_for(opened_with("tea"), Reply.answer("tea 1"), Reply.answer("tea 2"))
    model_server.script_for(opened_with("coffee"), Reply.answer("coffee 1"))
    ask = {"model": CLAUDE, "max_tokens": 10}

    def turn(*texts: str) -> str:
        roles = ["user", "assistant"] * len(texts)
        messages: Any = [{"role": r, "content": t} for r, t in zip(roles, texts, strict=False)]
        reply = claude.messages.create(**ask, messages=messages)
        return str(reply.content[0].text)  # type: ignore[union-attr]

    # When coffee asks first, then tea twice, then a third conversation
    answers = [turn("coffee?"), turn("tea?"), turn("tea?", "tea 1", "more"), turn("water?")]
    # Then each conversation got its own replies in order, and the rest the shared one
    assert answers == ["coffee 1", "tea 1", "tea 2", "shared"]


def test_model_server_matches_openai_conversations_by_their_first_user_message(
    gpt: openai.OpenAI, model_server: ModelServer
) -> None:
    # Given a reply scripted for the conversation opened with "find tea", and a shared one
    model_server.script(Reply.answer("shared"))
    model_server.script_for(opened_with("find tea"), Reply.answer("Tea is green."))
    # When a system-prompted conversation about tea asks, after another one
    other = gpt.chat.completions.create(
        model="gpt-5.4-mini", messages=[{"role": "user", "content": "research tea"}]
    )
    tea = gpt.chat.completions.create(
        model="gpt-5.4-mini",
        messages=[
            {"role": "system", "content": "You research."},
            {"role": "user", "content": [{"type": "text", "text": "find tea"}]},
        ],
    )
    # Then the tea conversation got its reply, and the other the shared one
    assert [other.choices[0].message.content, tea.choices[0].message.content] == [
        "shared",
        "Tea is green.",
    ]


def test_model_server_rejects_a_tool_choice_the_services_would_refuse(
    claude: anthropic.Anthropic, gpt: openai.OpenAI, model_server: ModelServer
) -> None:
    # Given requests forcing a tool that is not offered, and OpenAI's choice without tools
    user: Any = [{"role": "user", "content": "hi"}]
    # When each is sent, Then the server refuses it as the service would
    with pytest.raises(anthropic.BadRequestError, match="not among the tools"):
        claude.messages.create(
            model=CLAUDE, max_tokens=10, messages=user, tools=[TOOL],
            tool_choice={"type": "tool", "name": "g"},
        )  # fmt: skip
    with pytest.raises(openai.BadRequestError, match="only allowed when 'tools'"):
        gpt.chat.completions.create(model="gpt-5.4-mini", messages=user, tool_choice="auto")
    assert len(model_server.rejections) == 2


def test_model_server_notes_each_answers_own_time_at_the_wire(
    claude: anthropic.Anthropic, model_server: ModelServer
) -> None:
    # Given two scripted answers
    model_server.script(Reply.answer("one"), Reply.answer("two"))
    # When both are asked for
    for text in ("a", "b"):
        claude.messages.create(
            model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": text}]
        )
    # Then each request's time is noted on its own (by the server's thread once the last byte
    # is written, which the client may have read a moment before), together the busy time
    wait_until(lambda: len(model_server.answer_seconds) == 2, "both answers' times noted")
    times = model_server.answer_seconds
    assert len(times) == 2, times
    assert sum(times) == pytest.approx(model_server.busy_seconds), (
        times,
        model_server.busy_seconds,
    )
