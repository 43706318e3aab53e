"""`harness mcp list` and the doctor's MCP checks, on a real stdio server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.commands.mcp import mcp_checks
from harness.settings import Settings, get_settings
from tests.mcp.test_mcp_tools import DEMO


def _workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The operator's mcp.json beside `tmp_path/workspace`, with one working server and one
    with an unset variable; the settings point at both. Returns the workspace."""
    servers = {
        "demo": {"command": sys.executable, "args": [DEMO]},
        "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"A": "${MCP_TEST_UNSET}"}},
    }
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.setenv("AGENT_WORKSPACE", str(workspace))
    monkeypatch.setenv("MCP_CONFIG", str(tmp_path / "mcp.json"))
    monkeypatch.delenv("MCP_TEST_UNSET", raising=False)
    get_settings.cache_clear()
    return workspace


def _workspace_file_leaving(marker: Path, workspace: Path) -> Path:
    """Write a workspace mcp.json whose server `evil` would create `marker`; return it."""
    evil = {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"]}
    (workspace / "mcp.json").write_text(json.dumps({"mcpServers": {"evil": evil}}))
    return marker


def test_mcp_list_shows_each_server_its_state_and_its_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given one working server and one with an unset variable
    _workspace(tmp_path, monkeypatch)

    # When the list is asked for
    result = CliRunner().invoke(app, ["mcp", "list"])
    get_settings.cache_clear()

    # Then both are shown, the working one with its tools, the other with its reason
    assert result.exit_code == 0, result.output
    assert "demo (stdio): running" in result.output and "demo__echo" in result.output
    assert "web (http): failed - environment variable(s) not set: MCP_TEST_UNSET" in result.output


def test_doctor_checks_fail_for_a_server_that_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = _workspace(tmp_path, monkeypatch)

    settings = Settings(_env_file=None, agent_workspace=workspace, mcp_config=tmp_path / "mcp.json")  # type: ignore[call-arg]
    checks = {c.name: c for c in mcp_checks(settings)}
    get_settings.cache_clear()

    assert checks["mcp demo"].status == "ok", checks
    assert checks["mcp web"].status == "fail" and "MCP_TEST_UNSET" in checks["mcp web"].detail


def test_mcp_list_starts_no_server_of_the_workspace_file_and_says_how_to_adopt_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an operator file with one server, and a workspace mcp.json whose server would
    # leave a marker
    workspace = _workspace(tmp_path, monkeypatch)
    marker = _workspace_file_leaving(tmp_path / "started", workspace)

    # When the list is asked for
    result = CliRunner().invoke(app, ["mcp", "list"])
    get_settings.cache_clear()

    # Then only the operator's servers are shown, and the workspace file is called ignored
    assert result.exit_code == 0, result.output
    assert not marker.exists(), "a server of workspace/mcp.json was started"
    assert "evil" not in result.output.replace(str(workspace), "")
    assert "is ignored" in result.output and "merge the servers you trust" in result.output
    assert "demo (stdio): running" in result.output


def test_mcp_list_refuses_mcp_config_inside_the_workspace_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given MCP_CONFIG pointing into the workspace
    workspace = _workspace(tmp_path, monkeypatch)
    monkeypatch.setenv("MCP_CONFIG", str(workspace / "mcp.json"))
    get_settings.cache_clear()

    # When the list is asked for
    result = CliRunner().invoke(app, ["mcp", "list"])
    get_settings.cache_clear()

    # Then it fails with one line naming MCP_CONFIG, no traceback
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: MCP_CONFIG ("), result.output
    assert "Traceback" not in result.output


def test_doctor_warns_about_an_ignored_workspace_file_without_starting_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a workspace mcp.json whose server would leave a marker
    workspace = _workspace(tmp_path, monkeypatch)
    marker = _workspace_file_leaving(tmp_path / "started", workspace)
    settings = Settings(_env_file=None, agent_workspace=workspace, mcp_config=tmp_path / "mcp.json")  # type: ignore[call-arg]

    # When the doctor checks MCP
    checks = {c.name: c for c in mcp_checks(settings)}

    # Then it warns with the way to adopt the file, starts only the operator's servers
    assert not marker.exists(), "a server of workspace/mcp.json was started"
    warning = checks["mcp workspace file"]
    assert warning.status == "warn" and str(tmp_path / "mcp.json") in warning.fix, warning
    assert set(checks) == {"mcp workspace file", "mcp demo", "mcp web"}, checks
