"""`prepare` and `send_async`: a call rendered in one place (the run's worker) and sent as is
in another (the model gateway) is the call `complete_async` makes, on each provider; and the
request's httpx2 log line stays out of the log unless `harness.llm` is at DEBUG."""

from __future__ import annotations

import asyncio
import logging

import pytest

from harness.llm.provider import ModelProvider, PreparedModelProvider
from harness.llm.types import Message, ToolSpec
from tests.fakes.model_server import ModelServer, Reply

SEARCH = ToolSpec(name="search", description="Search.", parameters={"type": "object"})


def _prepared(provider: ModelProvider) -> PreparedModelProvider:
    assert isinstance(provider, PreparedModelProvider), f"{provider.name} cannot prepare"
    return provider


def test_a_prepared_call_sends_what_complete_async_sends(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    # Given a call with tools, a forced tool choice and a limit of its own
    call = {
        "system": "Be brief.",
        "messages": [Message.user("tea?")],
        "tools": [SEARCH],
        "max_tokens": 77,
        "tool_choice": "search",
    }
    model_server.script(Reply.answer("Green tea."), Reply.answer("Green tea.", chunk=3))
    # When it is made once directly and once prepared, then sent
    direct = asyncio.run(_prepared(provider).complete_async(**call))  # type: ignore[arg-type]
    pieces: list[str] = []
    prepared = _prepared(provider).prepare(**call)  # type: ignore[arg-type]
    sent = asyncio.run(_prepared(provider).send_async(prepared, on_text=pieces.append))
    # Then the server got the same request twice, and both turns are the same answer
    first, second = model_server.requests
    assert first.body == second.body, "the prepared request differs from complete_async's"
    assert direct.text == sent.text == "".join(pieces) == "Green tea."


def test_a_prepared_request_holds_no_key(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    prepared = _prepared(provider).prepare(system="s", messages=[Message.user("x")])
    assert model_server.api_key not in prepared


def test_the_model_requests_http_line_is_logged_only_at_debug(
    provider: ModelProvider, model_server: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    # Given httpx2 logging at INFO
    caplog.set_level(logging.INFO, logger="httpx2")
    model_server.script(Reply.answer("a"), Reply.answer("b"))
    # When a call is made
    asyncio.run(_prepared(provider).complete_async(system="s", messages=[Message.user("x")]))
    # Then its request line was left out
    lines = [r for r in caplog.records if r.name == "httpx2" and "HTTP Request" in r.msg]
    assert lines == [], f"expected no request line, got {[r.getMessage() for r in lines]}"
    # When harness.llm logs at DEBUG, the next call's line shows
    caplog.set_level(logging.DEBUG, logger="harness.llm")
    asyncio.run(_prepared(provider).complete_async(system="s", messages=[Message.user("x")]))
    lines = [r for r in caplog.records if r.name == "httpx2" and "HTTP Request" in r.msg]
    assert len(lines) == 1, "the request line did not show at DEBUG"
