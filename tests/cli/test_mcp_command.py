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
    servers = {
        "demo": {"command": sys.executable, "args": [DEMO]},
        "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"A": "${MCP_TEST_UNSET}"}},
    }
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path))
    monkeypatch.delenv("MCP_TEST_UNSET", raising=False)
    get_settings.cache_clear()
    return tmp_path


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

    checks = {c.name: c for c in mcp_checks(Settings(_env_file=None, agent_workspace=workspace))}  # type: ignore[call-arg]
    get_settings.cache_clear()

    assert checks["mcp demo"].status == "ok", checks
    assert checks["mcp web"].status == "fail" and "MCP_TEST_UNSET" in checks["mcp web"].detail
