"""The state folder: beside the workspace, private files, and the move from the old place."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from harness.settings import Settings
from harness.state_dir import (
    migrate_legacy_redis,
    redis_dir,
    redis_password,
    state_dir,
    write_private,
)


def _settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_state_dir_defaults_to_dot_harness_beside_the_workspace(tmp_path: Path) -> None:
    settings = _settings(agent_workspace=tmp_path / "workspace")
    assert state_dir(settings) == (tmp_path / ".harness").resolve()


def test_state_dir_follows_harness_state_dir_and_ignores_an_empty_one(tmp_path: Path) -> None:
    assert state_dir(_settings(harness_state_dir=tmp_path / "st")) == (tmp_path / "st").resolve()
    empty = _settings(agent_workspace=tmp_path / "ws", harness_state_dir="")
    assert state_dir(empty) == (tmp_path / ".harness").resolve()


def test_redis_password_is_generated_once_and_readable_by_the_owner_only(tmp_path: Path) -> None:
    # Given a fresh state folder
    # When the password is asked for twice
    first, second = redis_password(tmp_path), redis_password(tmp_path)
    # Then it is the same, long, and its file has mode 0600
    assert first == second and len(first) >= 32
    assert _mode(redis_dir(tmp_path) / "password") == 0o600


def test_old_redis_data_in_the_workspace_moves_to_the_state_folder(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given data under the old place, <workspace>/.harness/redis
    workspace, state = tmp_path / "workspace", tmp_path / ".harness"
    old = workspace / ".harness" / "redis"
    old.mkdir(parents=True)
    (old / "appendonly.aof").write_text("data")
    (old / "url").write_text("redis://127.0.0.1:1/0\n")
    # When the fleet starts
    with caplog.at_level(logging.INFO, logger="harness.state_dir"):
        moved = migrate_legacy_redis(workspace, state)
    # Then the data is in the state folder, the stale URL is gone, and one line says so
    assert moved
    assert (redis_dir(state) / "appendonly.aof").read_text() == "data"
    assert not (redis_dir(state) / "url").exists()
    assert not (workspace / ".harness").exists()
    assert [r.getMessage() for r in caplog.records if "moved" in r.getMessage()] != []


def test_old_redis_data_is_left_alone_when_the_state_folder_has_some(tmp_path: Path) -> None:
    workspace, state = tmp_path / "workspace", tmp_path / ".harness"
    (workspace / ".harness" / "redis").mkdir(parents=True)
    redis_dir(state).mkdir(parents=True)
    assert not migrate_legacy_redis(workspace, state)
    assert (workspace / ".harness" / "redis").exists()


def test_shared_root_holds_the_workspace_and_the_state_folder(tmp_path: Path) -> None:
    # Given only HARNESS_SHARED_ROOT
    settings = _settings(harness_shared_root=tmp_path / "shared")
    # Then the workspace and the state folder default under it
    assert settings.agent_workspace == tmp_path / "shared" / "workspace"
    assert state_dir(settings) == (tmp_path / "shared" / "state").resolve()


def test_explicit_workspace_and_state_folder_win_over_the_shared_root(tmp_path: Path) -> None:
    # Given a shared root and an explicit AGENT_WORKSPACE and HARNESS_STATE_DIR
    settings = _settings(
        harness_shared_root=tmp_path / "shared",
        agent_workspace=tmp_path / "ws",
        harness_state_dir=tmp_path / "st",
    )
    # Then those are used as they are
    assert settings.agent_workspace == tmp_path / "ws"
    assert state_dir(settings) == (tmp_path / "st").resolve()


def test_write_private_replaces_the_file_whole_so_a_reader_never_sees_half(
    tmp_path: Path,
) -> None:
    # Given a private file that a reader has open, once readable by others
    path = tmp_path / "fleets" / "one.json"
    path.parent.mkdir()
    path.write_text('{"old": "record"}\n')
    path.chmod(0o644)
    with path.open() as reader:
        # When it is written again
        write_private(path, '{"new": "record"}\n')
        # Then the open reader still reads the old text whole (the new one was renamed in,
        # not written over it), the file holds the new text, 0600, and no temporary is left
        assert reader.read() == '{"old": "record"}\n'
    assert path.read_text() == '{"new": "record"}\n'
    assert _mode(path) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["one.json"]
