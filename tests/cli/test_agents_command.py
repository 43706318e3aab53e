"""`harness agents [--json]`: every agent, its load errors and warnings; exit 0 all the same."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.settings import get_settings

CODER = (
    "---\ndescription: Writes code.\nmodel: claude-haiku-4-5\ntools: [read, nope, gh__issue]\n"
    "max_turns: 5\ntemperature: 0.2\nbindings: [{channel: slack, chat_id: C1}]\n---\nCode.\n"
)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A workspace with one good agent and one broken file; the operator binds telegram to
    coder and a Slack chat to an agent that does not exist; one MCP server `gh`."""
    ws = tmp_path / "workspace"
    (ws / "agents" / "coder").mkdir(parents=True)
    (ws / "agents" / "coder" / "AGENT.md").write_text(CODER)
    (ws / "agents" / "broken").mkdir()
    (ws / "agents" / "broken" / "AGENT.md").write_text("---\ndescription: x\nmax_turns: 0\n---\n")
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"gh": {"command": "gh-mcp"}}}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    monkeypatch.setenv("MCP_CONFIG", str(tmp_path / "mcp.json"))
    monkeypatch.setenv("AGENT_BINDINGS", "telegram=coder, slack:C9=ghost")
    get_settings.cache_clear()
    yield ws
    get_settings.cache_clear()


def test_agents_json_lists_every_agent_its_errors_and_warnings(workspace: Path) -> None:
    # Given the workspace above
    # When `harness agents --json` runs
    result = CliRunner().invoke(app, ["agents", "--json"])
    # Then it exits 0 with one JSON document
    assert result.exit_code == 0, result.output
    table: dict[str, Any] = json.loads(result.output)
    main, coder = table["agents"]
    # listing the default agent and coder as they would run
    assert main["name"] == "main" and "read" in main["tools"] and "gh__*" in main["tools"]
    assert coder["model"] == "claude-haiku-4-5" and coder["max_turns"] == 5
    assert coder["temperature"] == 0.2
    assert coder["tools"] == ["read", "gh__issue"], "an MCP tool of a configured server counts"
    assert coder["unknown_tools"] == ["nope"]
    assert {(b["where"], b["source"]) for b in coder["bindings"]} == {
        ("slack:C1", "agents/coder/AGENT.md"),
        ("telegram", "AGENT_BINDINGS"),
    }
    # the broken file with its line, and what is worth a warning
    [error] = table["errors"]
    assert error.startswith("agents/broken/AGENT.md:3: max_turns"), error
    warnings = "\n".join(table["warnings"])
    assert "nope" in warnings and "slack:C9=ghost names no agent" in warnings


def test_agents_table_shows_errors_and_exits_0(workspace: Path) -> None:
    # When `harness agents` runs without --json
    result = CliRunner().invoke(app, ["agents"], env={"COLUMNS": "200"})
    # Then the table names both agents, and the error is shown, with exit 0
    assert result.exit_code == 0, result.output
    assert "coder" in result.output and "main" in result.output
    assert "failed to load agents/broken/AGENT.md:3" in result.output


@pytest.mark.parametrize(
    ("bindings", "named"),
    [
        ("telegram=coder, slack:C1", "'slack:C1' is not channel"),
        ("slack:C1=network:Not A Name", "'slack:C1=network:Not A Name': 'Not A Name' is not a"),
    ],
)
def test_a_bad_agent_bindings_is_one_line_naming_the_variable(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, bindings: str, named: str
) -> None:
    # Given AGENT_BINDINGS with an entry that names no target (none, or a bad network name)
    monkeypatch.setenv("AGENT_BINDINGS", bindings)
    get_settings.cache_clear()
    # When any command reads the settings
    result = CliRunner().invoke(app, ["agents"])
    # Then it fails with one line naming the variable, the entry and what is wrong
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"AGENT_BINDINGS: {named}" in lines[0], lines


TRIAGE = (
    "---\ndescription: Codes, then codes again.\nagents: [coder]\n"
    "router: {kind: sequence, order: [coder]}\nbindings: [{channel: slack, chat_id: C2}]\n---\n"
)


def test_agents_lists_the_chats_bound_to_networks_and_warns_of_a_missing_one(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a network binding one chat by its file, the operator binding another chat to it
    # and a third to a network that does not exist
    (workspace / "networks").mkdir()
    (workspace / "networks" / "triage.md").write_text(TRIAGE)
    monkeypatch.setenv("AGENT_BINDINGS", "slack:C3=network:triage, slack:C4=network:ghost")
    get_settings.cache_clear()
    # When `harness agents --json` runs, and then the table
    result = CliRunner().invoke(app, ["agents", "--json"])
    shown = CliRunner().invoke(app, ["agents"], env={"COLUMNS": "200"})
    # Then the network is listed with both bindings and who declared each
    assert result.exit_code == 0, result.output
    table: dict[str, Any] = json.loads(result.output)
    [triage] = table["networks"]
    assert triage["name"] == "triage" and triage["agents"] == ["coder"]
    assert {(b["where"], b["source"]) for b in triage["bindings"]} == {
        ("slack:C2", "networks/triage.md"),
        ("slack:C3", "AGENT_BINDINGS"),
    }
    # and the binding to the missing network is a warning
    warnings = "\n".join(table["warnings"])
    assert "slack:C4=network:ghost names no network" in warnings, warnings
    # and the table shows the network's bindings
    assert shown.exit_code == 0, shown.output
    assert "network:triage" in shown.output and "slack:C2 (networks/triage.md)" in shown.output
