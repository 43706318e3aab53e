"""MCP servers as tools: a real stdio server written for the tests, through the registry and
through the agent's real loop."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.mcp import McpToolbox, load_config
from harness.mcp.config import ServerConfig
from harness.mcp.connection import ServerConnection
from harness.mcp.tool import MAX_RESULT_CHARS, McpTool
from harness.tools.base import ToolContext, ToolRegistry
from tests.runtime_fixtures import ManualClock

DEMO = str(Path(__file__).with_name("demo_server.py"))


def demo_config(timeout: float = 20.0) -> ServerConfig:
    return ServerConfig(name="demo", command=sys.executable, args=(DEMO,), timeout=timeout)


@pytest.fixture
def toolbox() -> Iterator[McpToolbox]:
    """The demo server with a call timeout generous for a loaded machine (the silent-server
    test makes its own, short one)."""
    box = McpToolbox([demo_config(timeout=30.0)])
    yield box
    box.close()


def _registry(box: McpToolbox) -> ToolRegistry:
    registry = ToolRegistry()
    registry.attach(box)
    return registry


def test_config_reads_mcp_servers_and_expands_variables(tmp_path: Path) -> None:
    # Given an mcp.json in the usual format, with a secret from the environment
    config = {
        "mcpServers": {
            "files": {"command": "srv", "args": ["--root", "${HOME_DIR}"], "env": {"T": "${TOK}"}},
            "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${TOK}"}},
        }
    }
    (tmp_path / "mcp.json").write_text(json.dumps(config))

    # When it is loaded
    files, web = load_config(tmp_path / "mcp.json", {"HOME_DIR": "/srv", "TOK": "s3cret"})

    # Then the variables are filled in and each server has its transport
    assert (files.transport, files.args, files.env, files.problem) == (
        "stdio",
        ("--root", "/srv"),
        {"T": "s3cret"},
        None,
    )
    assert (web.transport, web.headers, web.problem) == (
        "http",
        {"Authorization": "Bearer s3cret"},
        None,
    )


def test_a_server_with_a_missing_variable_is_reported_and_never_started(tmp_path: Path) -> None:
    # Given a server whose token variable is not set
    config = {"mcpServers": {"web": {"url": "http://127.0.0.1:9/mcp", "headers": {"A": "${NOPE}"}}}}
    (tmp_path / "mcp.json").write_text(json.dumps(config))

    # When the toolbox is asked for its tools and status
    box = McpToolbox.from_file(tmp_path / "mcp.json", {})
    status = box.status()
    box.close()

    # Then the server offers no tools and says which variable is missing
    assert box.tools() == []
    assert status[0].state == "failed" and "NOPE" in status[0].reason, status


def test_mcp_tools_are_listed_as_server__tool_with_their_schema(toolbox: McpToolbox) -> None:
    specs = {s.name: s for s in _registry(toolbox).specs()}
    assert specs, toolbox.status()

    assert {"demo__echo", "demo__crash", "demo__hang", "demo__big"} <= set(specs), specs.keys()
    assert specs["demo__echo"].parameters["properties"]["text"]["type"] == "string"
    tool = next(t for t in toolbox.tools() if t.name == "demo__echo")
    assert isinstance(tool, McpTool) and tool.risky, "MCP tools count as risky"


def test_an_mcp_tool_call_returns_the_server_answer(toolbox: McpToolbox, tmp_path: Path) -> None:
    outcome = _registry(toolbox).execute("demo__echo", {"text": "hi"}, ToolContext(tmp_path))

    assert (outcome.content, outcome.is_error) == ("echo: hi", False)


def test_an_mcp_tools_structured_content_comes_beside_its_text(
    toolbox: McpToolbox, tmp_path: Path
) -> None:
    # When a tool answers structured content
    outcome = _registry(toolbox).execute("demo__forecast", {"city": "Oslo"}, ToolContext(tmp_path))
    # Then it is kept as the structured result, and the model's text is the server's text
    assert outcome.structured == {"city": "Oslo", "temp_c": 21}, outcome
    assert not outcome.is_error and "Oslo" in outcome.content and "21" in outcome.content


def test_a_tool_error_and_a_long_answer_reach_the_model_as_text(
    toolbox: McpToolbox, tmp_path: Path
) -> None:
    registry = _registry(toolbox)

    failed = registry.execute("demo__fail", {}, ToolContext(tmp_path))
    long = registry.execute("demo__big", {}, ToolContext(tmp_path))

    assert failed.is_error and "fail" in failed.content, failed
    assert not long.is_error and len(long.content) < MAX_RESULT_CHARS + 100, len(long.content)
    assert "more characters cut" in long.content


def test_a_server_crash_mid_call_is_a_tool_error_and_the_server_is_marked_down(
    toolbox: McpToolbox, tmp_path: Path
) -> None:
    # Given a running server
    registry = _registry(toolbox)
    assert registry.execute("demo__echo", {"text": "a"}, ToolContext(tmp_path)).content == "echo: a"

    # When it dies during a call
    outcome = registry.execute("demo__crash", {}, ToolContext(tmp_path))

    # Then the model reads an error, and the server is down with a restart pending
    assert outcome.is_error and "demo" in outcome.content, outcome
    status = toolbox.status()[0]
    assert status.state == "failed", status


def test_a_crashed_server_is_restarted_after_its_backoff_and_the_next_call_succeeds(
    clock: ManualClock, tmp_path: Path
) -> None:
    # Given a running server whose restart backoff runs on a hand-driven clock
    connection = ServerConnection(demo_config(timeout=30.0), clock=clock)
    registry = ToolRegistry([McpTool(connection, remote) for remote in connection.tools()])
    ctx = ToolContext(tmp_path)
    try:
        assert registry.execute("demo__echo", {"text": "a"}, ctx).content == "echo: a"

        # When it dies during a call
        crashed = registry.execute("demo__crash", {}, ctx)

        # Then a call before the first backoff (1 s) ends fails at once, saying when it restarts
        assert crashed.is_error and connection.state == "failed", (crashed, connection.reason)
        early = registry.execute("demo__echo", {"text": "b"}, ctx)
        assert early.is_error and "next restart in" in early.content, early

        # And once the backoff has passed, the next call starts the server again and succeeds
        clock.advance(1.0)
        again = registry.execute("demo__echo", {"text": "c"}, ctx)
        assert (again.content, again.is_error) == ("echo: c", False), (again, connection.reason)
        assert (connection.state, connection.reason) == ("running", "")
    finally:
        connection.close()


def test_a_server_that_never_answers_times_out_as_a_tool_error(tmp_path: Path) -> None:
    box = McpToolbox([demo_config(timeout=2.0)])
    try:
        outcome = _registry(box).execute("demo__hang", {}, ToolContext(tmp_path))
    finally:
        box.close()

    assert outcome.is_error and "timed out" in outcome.content, outcome


def test_a_tool_list_change_is_listed_again(toolbox: McpToolbox, tmp_path: Path) -> None:
    # Given a running server without the tool `extra`
    registry = _registry(toolbox)
    assert "demo__extra" not in registry.names()

    # When a call makes the server add it and announce the change
    assert registry.execute("demo__grow", {}, ToolContext(tmp_path)).content == "grown"

    # Then the next listing has it, and it can be called
    assert "demo__extra" in registry.names(), registry.names()
    assert registry.execute("demo__extra", {}, ToolContext(tmp_path)).content == "extra done"
