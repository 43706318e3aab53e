"""resolve_redis_url: REDIS_URL, then this workspace's fleet, then the only fleet running."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import ConfigurationError
from harness.fleet import fleets
from harness.runtime.connection import resolve_redis_url
from harness.settings import Settings
from harness.state_dir import redis_dir, redis_url_file, write_private


@pytest.fixture(autouse=True)
def _no_workspace_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_WORKSPACE", raising=False)
    monkeypatch.delenv("REDIS_URL", raising=False)


def _settings(workspace: Path, **values: object) -> Settings:
    return Settings(_env_file=None, agent_workspace=workspace, **values)  # type: ignore[call-arg]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _record(workspace: Path, url: str, pid: int | None = None) -> fleets.FleetRecord:
    record = fleets.FleetRecord(
        workspace=str(workspace.resolve()), state_dir=str(workspace.parent / ".harness"),
        redis_url=url, pid=os.getpid() if pid is None else pid, port=8000,
    )  # fmt: skip
    fleets.publish(record)
    return record


def test_redis_url_comes_first(tmp_path: Path) -> None:
    _record(tmp_path / "other", "redis://other:1/0")
    settings = _settings(tmp_path / "ws", redis_url="redis://configured:6379/0")
    assert resolve_redis_url(settings) == "redis://configured:6379/0"


def test_the_url_published_in_this_workspaces_state_folder_is_found(tmp_path: Path) -> None:
    # Given a live `harness up` (this process) that published its URL beside the workspace
    state = tmp_path / ".harness"
    write_private(redis_url_file(state), "redis://:pw@127.0.0.1:7001/0\n")
    (redis_dir(state) / "owner.pid").write_text(f"{os.getpid()}\n")
    # When the CLI resolves Redis for that workspace
    # Then it gets that URL
    assert resolve_redis_url(_settings(tmp_path / "workspace")) == "redis://:pw@127.0.0.1:7001/0"


def test_a_url_left_by_a_dead_fleet_is_not_used(tmp_path: Path) -> None:
    state = tmp_path / ".harness"
    write_private(redis_url_file(state), "redis://127.0.0.1:7001/0\n")
    (redis_dir(state) / "owner.pid").write_text(f"{_dead_pid()}\n")
    with pytest.raises(ConfigurationError, match="no Redis found"):
        resolve_redis_url(_settings(tmp_path / "workspace"))


def test_the_only_running_fleet_is_found_from_any_folder(tmp_path: Path) -> None:
    # Given one fleet running for another workspace
    _record(tmp_path / "project" / "workspace", "redis://:pw@127.0.0.1:7002/0")
    # When the CLI resolves Redis for a workspace that has none
    # Then it uses that fleet
    assert resolve_redis_url(_settings(tmp_path / "here")) == "redis://:pw@127.0.0.1:7002/0"


def test_with_two_fleets_the_workspace_picks_one_and_none_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two running fleets
    a, b = tmp_path / "a" / "workspace", tmp_path / "b" / "workspace"
    _record(a, "redis://a:1/0")
    _record(b, "redis://b:1/0")
    # Then an unrelated folder cannot guess, and says how to pick
    with pytest.raises(ConfigurationError, match="--workspace PATH") as info:
        resolve_redis_url(_settings(tmp_path / "here"))
    assert "\n" not in str(info.value), "expected a one-line message"
    # And naming a workspace picks its fleet
    monkeypatch.setenv("AGENT_WORKSPACE", str(b))
    assert resolve_redis_url(_settings(b)) == "redis://b:1/0"


def test_an_explicit_workspace_without_a_fleet_does_not_fall_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(tmp_path / "other", "redis://other:1/0")
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "mine"))
    with pytest.raises(ConfigurationError, match="no Redis found") as info:
        resolve_redis_url(_settings(tmp_path / "mine"))
    assert str(fleets.fleets_dir()) in str(info.value), "expected it to say where it looked"


def test_a_stale_fleet_record_is_ignored_and_removed(tmp_path: Path) -> None:
    # Given a record left by a fleet whose process is gone
    workspace = tmp_path / "workspace"
    _record(workspace, "redis://gone:1/0", pid=_dead_pid())
    # When Redis is resolved
    with pytest.raises(ConfigurationError, match="no fleet running"):
        resolve_redis_url(_settings(tmp_path / "here"))
    # Then the record is gone
    assert not fleets.record_path(workspace).exists()
