"""MCP over streamable HTTP: a server written with the official SDK, served by uvicorn on a
local port, configured in the operator's `mcp.json` (MCP_CONFIG) with a `${VAR}` bearer
token, and called by the model through the agent's real loop."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from harness.agent.deps import build_deps, set_agent_deps
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply, anthropic_tool_results
from tests.mcp.http_server import HttpMcpServer

TOKEN = "mcp-test-token-7f3a"


@pytest.fixture
def web() -> Iterator[HttpMcpServer]:
    with HttpMcpServer(TOKEN) as server:
        yield server


def _configure(agent: AgentRig, server: HttpMcpServer, **extra: Any) -> None:
    """Write the operator's mcp.json with the token as `${WEB_MCP_TOKEN}` and rebuild the
    agent's tools."""
    entry = {"url": server.url, "headers": {"Authorization": "Bearer ${WEB_MCP_TOKEN}"}}
    config = {"mcpServers": {"web": {**entry, "safe": True, **extra}}}
    settings = make_settings(agent.workspace, agent.model)
    settings.mcp_config.write_text(json.dumps(config))
    agent.deps = build_deps(settings)
    set_agent_deps(agent.deps)


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body["tools"]]


def test_the_model_calls_an_http_mcp_tool_with_the_configured_header(
    agent: AgentRig, web: HttpMcpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an HTTP server in mcp.json whose token comes from the environment
    monkeypatch.setenv("WEB_MCP_TOKEN", TOKEN)
    _configure(agent, web)
    agent.model.script(Reply.tool("web__echo", {"text": "ping"}), Reply.answer("It said ping."))

    # When the model calls its tool through the loop
    agent.say("use the web echo tool")

    # Then the tool was offered, called with the token, and its answer reached the model
    first, second = (r.body for r in agent.model.requests)
    assert "web__echo" in _tool_names(first), _tool_names(first)
    (result,) = anthropic_tool_results(second)
    assert "\nweb echo: ping\n</untrusted id=" in result["content"], result  # outside content
    assert web.rejected == 0
    assert agent.replies() == ["It said ping."]


def test_a_wrong_token_is_a_server_that_does_not_start_not_a_failed_run(
    agent: AgentRig, web: HttpMcpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEB_MCP_TOKEN", "wrong")
    _configure(agent, web)
    agent.model.script(Reply.answer("No web tools today."))

    agent.say("hello")

    (request,) = agent.model.requests
    assert not [n for n in _tool_names(request.body) if n.startswith("web__")]
    assert web.rejected >= 1
    assert agent.replies() == ["No web tools today."]


def test_an_http_server_that_never_answers_is_a_tool_error_the_model_reads(
    agent: AgentRig, web: HttpMcpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a server whose `hang` tool never answers, with a short timeout
    monkeypatch.setenv("WEB_MCP_TOKEN", TOKEN)
    _configure(agent, web, timeout=1.5)
    agent.model.script(Reply.tool("web__hang"), Reply.answer("It did not answer."))

    # When the model calls it
    agent.say("use the hang tool")

    # Then the model reads a timeout error and the run ends with its answer
    (result,) = anthropic_tool_results(agent.model.requests[1].body)
    assert result.get("is_error") and "timed out" in str(result["content"]), result
    assert agent.replies() == ["It did not answer."]


def test_a_tool_list_change_reaches_the_next_model_call(
    agent: AgentRig, web: HttpMcpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a server that adds a tool at runtime and announces it
    monkeypatch.setenv("WEB_MCP_TOKEN", TOKEN)
    _configure(agent, web)
    agent.model.script(Reply.tool("web__grow"), Reply.tool("web__extra"), Reply.answer("Done."))

    # When the model calls `grow`, then the new tool
    agent.say("grow a tool and use it")

    # Then the call after `grow` lists `extra`, and calling it works
    first, second, third = (r.body for r in agent.model.requests)
    assert "web__extra" not in _tool_names(first)
    results = anthropic_tool_results(second)
    assert "web__extra" in _tool_names(second), (_tool_names(second), results)
    assert "\nextra done\n</untrusted id=" in anthropic_tool_results(third)[-1]["content"]
