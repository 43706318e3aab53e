"""Fixtures for the tool tests: the test's tmp_path is the agent's workspace."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.tools import ToolContext, ToolOutcome, ToolRegistry, default_registry

Call = Callable[..., ToolOutcome]


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=tmp_path, allow_shell=True)


@pytest.fixture
def registry() -> ToolRegistry:
    return default_registry(allow_shell=True, allow_private_fetch=True)  # tests serve locally


@pytest.fixture
def call(registry: ToolRegistry, ctx: ToolContext) -> Call:
    """Execute a tool through the registry, as the agent loop will."""

    def _call(name: str, **arguments: Any) -> ToolOutcome:
        return registry.execute(name, arguments, ctx)

    return _call


def process_running(pid: int) -> bool:
    """True if `pid` is a live process (a zombie waiting to be reaped does not count)."""
    stat = Path(f"/proc/{pid}/stat")
    if stat.parent.parent.exists():
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        return state not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def unique_sleep() -> str:
    """A `sleep N.xxxxxx` command whose argument marks its process on the host (see below)."""
    return f"sleep 3000.{uuid.uuid4().int % 10**6:06d}"


def host_processes(command_line: str) -> list[int]:
    """Host pids of live processes whose command line is exactly `command_line`.

    Sandboxed processes have other pids inside their PID namespace, so tests find them by a
    unique command line instead of by a pid the command reports.
    """
    wanted = command_line.encode().replace(b" ", b"\0") + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "cmdline").read_bytes() == wanted and process_running(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found
