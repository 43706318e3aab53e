"""The worker's MCP servers come from the operator's file (MCP_CONFIG), never from
`workspace/mcp.json`, and a running worker follows changes of that file (issue 32:
`harness mcp list` showed a new server while the agent answered `unknown tool`)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harness.agent.deps import build_deps
from harness.errors import ConfigurationError
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import ModelServer, Reply
from tests.mcp.test_mcp_reload import write_demo_servers
from tests.waiting import wait_until


def test_worker_start_warns_once_about_a_workspace_mcp_json_and_offers_none_of_it(
    tmp_path: Path, model_server: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a workspace mcp.json naming a server
    workspace = tmp_path / "workspace"
    write_demo_servers(_mkdir(workspace) / "mcp.json", {"demo": tmp_path / "demo.pid"})

    # When a worker builds its agent's dependencies
    with caplog.at_level(logging.WARNING, logger="harness.agent.deps"):
        deps = build_deps(make_settings(workspace, model_server))
    try:
        names = deps.tools.names()
    finally:
        deps.close()

    # Then no tool of it is offered, nothing was started, and one warning says how to adopt it
    assert not [n for n in names if n.startswith("demo__")], names
    assert not (tmp_path / "demo.pid").exists()
    warnings = [r.getMessage() for r in caplog.records if "mcp.json" in r.getMessage()]
    assert len(warnings) == 1 and "is ignored" in warnings[0] and "mv " in warnings[0], warnings


def test_mcp_config_inside_the_workspace_stops_the_worker_with_one_line(
    tmp_path: Path, model_server: ModelServer
) -> None:
    workspace = tmp_path / "workspace"
    settings = make_settings(workspace, model_server, mcp_config=workspace / "servers.json")

    with pytest.raises(ConfigurationError, match=r"^MCP_CONFIG .* inside the workspace"):
        build_deps(settings)


def test_the_agent_offers_a_server_added_while_the_worker_runs(agent: AgentRig) -> None:
    # Given a worker that started with no MCP servers and has answered a message
    config = agent.deps.settings.mcp_config
    agent.model.script(Reply.answer("No tools yet."))
    agent.say("hello")

    # When the operator adds a server to the MCP config
    write_demo_servers(config, {"demo": config.with_name("demo.pid")})

    # Then the worker lists its tools within the interval, and the next model call offers them
    wait_until(lambda: "demo__echo" in agent.deps.tools.names(), "the new server's tools")
    agent.model.script(Reply.tool("demo__echo", {"text": "hi"}), Reply.answer("It said hi."))
    agent.say("use the new tool")
    offered = [t["name"] for t in agent.model.requests[1].body["tools"]]
    assert "demo__echo" in offered, offered
    assert agent.replies()[-1] == "It said hi."


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
