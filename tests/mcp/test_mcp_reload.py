"""A running worker follows the operator's MCP config (issue 32: a server added to the file
was unknown to the worker until it restarted). The file is read again at most every
`RELOAD_INTERVAL` seconds, on a hand-driven clock here."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.mcp import McpToolbox
from harness.mcp.watch import RELOAD_INTERVAL
from tests.mcp.test_mcp_tools import DEMO
from tests.runtime_fixtures import ManualClock


def write_demo_servers(path: Path, servers: dict[str, Path]) -> None:
    """One demo server per name, each writing its process id to its file when it starts."""
    entries = {
        name: {"command": sys.executable, "args": [DEMO], "env": {"DEMO_PIDFILE": str(pid)}}
        for name, pid in servers.items()
    }
    path.write_text(json.dumps({"mcpServers": entries}))


def _names(box: McpToolbox) -> set[str]:
    return {t.name for t in box.tools()}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return tmp_path / "mcp.json"


@pytest.fixture
def box(config: Path, clock: ManualClock) -> Iterator[McpToolbox]:
    """A toolbox following `config`, which starts with the server `one`."""
    write_demo_servers(config, {"one": config.with_name("one.pid")})
    toolbox = McpToolbox.from_file(config, clock=clock)
    yield toolbox
    toolbox.close()


def test_a_server_added_to_the_file_is_offered_once_the_interval_has_passed(
    box: McpToolbox, config: Path, clock: ManualClock
) -> None:
    # Given a running toolbox with one server
    assert "one__echo" in _names(box)

    # When the operator adds a second server
    write_demo_servers(
        config, {"one": config.with_name("one.pid"), "two": config.with_name("two.pid")}
    )

    # Then it is offered at the first listing after the interval, not before
    assert "two__echo" not in _names(box)
    clock.advance(RELOAD_INTERVAL)
    assert {"one__echo", "two__echo"} <= _names(box), box.status()


def test_a_changed_server_is_restarted_and_an_unchanged_one_is_kept(
    box: McpToolbox, config: Path, clock: ManualClock
) -> None:
    # Given two running servers
    pids = {name: config.with_name(f"{name}.pid") for name in ("one", "two")}
    write_demo_servers(config, pids)
    clock.advance(RELOAD_INTERVAL)
    assert {"one__echo", "two__echo"} <= _names(box)
    before = {name: pid.read_text() for name, pid in pids.items()}

    # When the entry of `two` changes (its pid file moves)
    pids["two"] = config.with_name("two-again.pid")
    write_demo_servers(config, pids)
    clock.advance(RELOAD_INTERVAL)
    assert {"one__echo", "two__echo"} <= _names(box)

    # Then `two` runs as a new process and `one` is the same process as before
    assert pids["two"].exists(), "the changed server was not started again"
    assert config.with_name("one.pid").read_text() == before["one"]
    assert {s.name: s.state for s in box.status()} == {"one": "running", "two": "running"}


def test_a_server_removed_from_the_file_is_no_longer_offered(
    box: McpToolbox, config: Path, clock: ManualClock
) -> None:
    # Given a running server
    assert "one__echo" in _names(box)

    # When the file is removed
    config.unlink()
    clock.advance(RELOAD_INTERVAL)

    # Then its tools are gone and it is no longer listed
    assert _names(box) == set() and box.status() == []


def test_a_broken_edit_keeps_the_running_servers_and_is_logged_once(
    box: McpToolbox, config: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a running server
    assert "one__echo" in _names(box)

    # When the file is saved half-written, and listed twice after the interval
    config.write_text('{"mcpServers": {')
    with caplog.at_level(logging.ERROR, logger="harness.mcp.toolbox"):
        for _ in range(2):
            clock.advance(RELOAD_INTERVAL)
            names = _names(box)

    # Then the server keeps running, and the error is one line
    assert "one__echo" in names
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "not valid JSON" in errors[0], errors
