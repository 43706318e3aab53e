"""Commands run from another folder use the running fleet's settings, and `doctor` changes
nothing (issue 32: `harness doctor` from another folder read that folder's `.env`, reported
"no ANTHROPIC_API_KEY" while the fleet answered, and created `./workspace`)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.fleet import fleets
from harness.fleet.follow import follow_running_fleet
from harness.settings import get_settings
from harness.settings_errors import read_dotenv_in
from tests.mcp.test_mcp_reload import write_demo_servers

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / ".env.example"
OWNED = ("ANTHROPIC_", "OPENAI_", "LLM_PROVIDER", "AGENT_", "REDIS_", "MCP_CONFIG", "HARNESS_")


def harness(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m harness.cli ARGS` in `cwd`, configured only by `.env` files and the fleet
    records of this test (XDG_STATE_HOME, set for every test by tests/conftest.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith((*OWNED, "PYTEST"))}
    env["PYTHONPATH"] = str(REPO)
    env["COLUMNS"] = "400"  # long temporary paths on one line
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under `folder` with its size and modification time."""
    return {
        str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
    }


@pytest.fixture
def fleet_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder where `harness up` runs (as recorded while it does): its `.env` names a model
    key and its own MCP config, which holds one server."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    (folder / ".env").write_text(
        "LLM_PROVIDER=anthropic\nANTHROPIC_API_KEY=sk-ant-fleet-key-for-the-test\n"
        "MCP_CONFIG=servers.json\n"
    )
    write_demo_servers(folder / "servers.json", {"fleetdemo": tmp_path / "fleetdemo.pid"})
    record = fleets.FleetRecord(
        workspace=str(folder / "workspace"),
        state_dir=str(folder / ".harness"),
        redis_url="redis://127.0.0.1:1/0",
        pid=os.getpid(),  # alive while the test runs
        port=8000,
        folder=str(folder),
    )
    fleets.publish(record)
    yield folder
    fleets.record_path(folder / "workspace").unlink(missing_ok=True)


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """Another folder, with no `.env` of its own."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


def test_doctor_leaves_the_folder_it_runs_in_unchanged(tmp_path: Path) -> None:
    # Given a folder holding only the template's .env, and no workspace yet
    (tmp_path / ".env").write_text(TEMPLATE.read_text())
    before = _snapshot(tmp_path)
    # When doctor runs there
    result = harness(tmp_path, "doctor", "--offline")
    # Then it reported the workspace it would use, and wrote and created nothing
    assert "workspace:" in result.stdout, result.stdout + result.stderr
    assert _snapshot(tmp_path) == before, result.stdout


def test_doctor_from_another_folder_uses_the_running_fleets_settings(
    fleet_folder: Path, elsewhere: Path
) -> None:
    # Given a fleet running in its folder, whose .env holds the model key
    # When doctor runs in a folder without that key
    result = harness(elsewhere, "doctor", "--offline")
    # Then it says whose settings it read, finds the key, and writes nothing here
    output = result.stdout + result.stderr
    assert f"settings: {fleet_folder / '.env'}" in output, output
    assert "ANTHROPIC_API_KEY" not in output, output
    assert "✔ model: anthropic" in output, output
    assert f"{fleet_folder / 'workspace'}" in output, output
    assert list(elsewhere.iterdir()) == [], output


def test_mcp_list_from_another_folder_shows_the_servers_the_fleets_worker_reads(
    fleet_folder: Path, elsewhere: Path
) -> None:
    # Given a fleet whose MCP_CONFIG (relative, so beside its .env) names one server, and a
    # folder holding a different mcp.json
    write_demo_servers(elsewhere / "mcp.json", {"localdemo": elsewhere / "localdemo.pid"})
    # When `harness mcp list` runs in that other folder
    result = harness(elsewhere, "mcp", "list")
    # Then it lists the fleet's server, the one its worker offers the agent, not the local one
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"MCP servers of {fleet_folder / 'servers.json'}" in result.stdout, result.stdout
    assert "fleetdemo (stdio): running" in result.stdout, result.stdout
    assert "localdemo" not in result.stdout, result.stdout


def test_commands_that_run_the_fleet_keep_this_folders_settings(
    fleet_folder: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a fleet running in another folder
    monkeypatch.chdir(elsewhere)
    _no_workspace_setting(monkeypatch)
    try:
        # When `up` (or another fleet process) starts here, or `doctor` runs here
        serving = [follow_running_fleet(name) for name in ("up", "worker", "web")]
        followed = follow_running_fleet("doctor")
        # Then only doctor follows the fleet
        assert serving == [None, None, None]
        assert followed is not None and followed.folder == str(fleet_folder)
        assert get_settings().agent_workspace == fleet_folder / "workspace"
        assert get_settings().mcp_config == fleet_folder / "servers.json"
    finally:
        read_dotenv_in(None)
        get_settings.cache_clear()


def _no_workspace_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset AGENT_WORKSPACE so that the fleet is followed, and have monkeypatch restore it at
    teardown even though following it sets it in os.environ (a plain delenv of an unset
    variable records nothing to undo)."""
    monkeypatch.setenv("AGENT_WORKSPACE", "")
    monkeypatch.delenv("AGENT_WORKSPACE")


@pytest.mark.parametrize(
    ("named", "follows"),
    [
        ("REDIS_URL=redis://127.0.0.1:6399/0\n", False),  # a fleet of its own
        ("AGENT_WORKSPACE=./mine\n", False),  # its own workspace, which no fleet serves
        ("LLM_PROVIDER=openai\n", True),  # nothing ties it to another fleet
    ],
)
def test_a_folder_whose_env_names_its_own_fleet_keeps_its_settings(
    fleet_folder: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch, named: str, follows: bool
) -> None:
    # Given a fleet running in another folder, and this folder's .env naming `named`
    (elsewhere / ".env").write_text(named)
    monkeypatch.chdir(elsewhere)
    _no_workspace_setting(monkeypatch)
    try:
        # When a command that talks to a fleet runs here
        followed = follow_running_fleet("knowledge")
        # Then it follows the other fleet only when nothing here names a Redis or workspace
        assert (followed is not None) is follows, followed
        if not follows:
            assert get_settings().agent_workspace != fleet_folder / "workspace"
    finally:
        read_dotenv_in(None)
        get_settings.cache_clear()
