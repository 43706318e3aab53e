"""Where the MCP servers are configured: MCP_CONFIG, never a file the agent can write."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigurationError
from harness.mcp import adoption_advice, config_path, ignored_workspace_file
from harness.settings import Settings


def _settings(workspace: Path, **values: object) -> Settings:
    return Settings(_env_file=None, agent_workspace=workspace, **values)  # type: ignore[call-arg]


def test_mcp_config_defaults_to_mcp_json_beside_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a fleet run from its project folder, with the default workspace
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MCP_CONFIG", raising=False)

    # When the MCP config's path is asked for
    path = config_path(_settings(Path("./workspace")))

    # Then it is mcp.json in the project folder, where .env is read, not in the workspace
    assert path == tmp_path.resolve() / "mcp.json"


def test_mcp_config_inside_the_workspace_is_refused(tmp_path: Path) -> None:
    # Given MCP_CONFIG naming the workspace's own mcp.json (through `..` too)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    for configured in (workspace / "mcp.json", workspace / "sub" / ".." / "mcp.json"):
        # When its path is asked for, Then it is refused with a line naming MCP_CONFIG
        with pytest.raises(ConfigurationError, match=r"^MCP_CONFIG .*inside the workspace"):
            config_path(_settings(workspace, mcp_config=configured))


def test_mcp_config_linked_into_the_workspace_is_refused(tmp_path: Path) -> None:
    # Given a project mcp.json that is a link to the workspace's (which may not exist yet),
    # and a project folder linked to a folder inside the workspace
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (tmp_path / "mcp.json").symlink_to(workspace / "mcp.json")
    (tmp_path / "conf").symlink_to(workspace, target_is_directory=True)

    # When their paths are asked for, Then both are refused
    for configured in (tmp_path / "mcp.json", tmp_path / "conf" / "servers.json"):
        with pytest.raises(ConfigurationError, match="MCP_CONFIG"):
            config_path(_settings(workspace, mcp_config=configured))


def test_a_workspace_mcp_json_is_reported_with_how_to_adopt_it(tmp_path: Path) -> None:
    # Given a workspace that holds an mcp.json, and no operator file yet
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "mcp.json").write_text("{}")
    settings = _settings(workspace, mcp_config=tmp_path / "mcp.json")

    # When it is looked for and explained
    ignored = ignored_workspace_file(settings)
    assert ignored == workspace / "mcp.json"
    advice = adoption_advice(ignored, config_path(settings))

    # Then the line says it is ignored and gives the move that adopts it after review
    assert "is ignored" in advice and "review" in advice, advice
    assert f"`mv {workspace / 'mcp.json'} {tmp_path / 'mcp.json'}`" in advice, advice
