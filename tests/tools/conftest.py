"""Fixtures for the tool tests: the test's tmp_path is the agent's workspace."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.tools import ShellPolicy, ToolContext, ToolOutcome, ToolRegistry, default_registry
from harness.tools.sandbox import SandboxSetting, sandbox_mode, unavailable_reason

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


def _mode(name: SandboxSetting) -> object:
    policy = ShellPolicy(name)
    runs = sandbox_mode(name) == name
    reason = "" if runs else f"the {name} sandbox cannot run here: {unavailable_reason(policy)}"
    return pytest.param(name, marks=pytest.mark.skipif(not runs, reason=reason), id=name)


@pytest.fixture(params=[_mode("bwrap"), _mode("landlock")])
def mode(request: pytest.FixtureRequest) -> SandboxSetting:
    """Each sandbox mode this machine can run."""
    name: SandboxSetting = request.param
    return name


def run(
    workspace: Path,
    command: str,
    policy: ShellPolicy,
    transcript: Path | None = None,
    timeout: int = 30,
) -> ToolOutcome:
    """Run `command` with the real bash tool through the registry, sandbox on."""
    registry = default_registry(allow_shell=True, shell_policy=policy)
    ctx = ToolContext(workspace, allow_shell=True, transcript=transcript)
    return registry.execute("bash", {"command": command, "timeout": timeout}, ctx)


@pytest.fixture
def survivor() -> Iterator[str]:
    """A unique `sleep` command line; any host process still running it is killed afterwards."""
    sleep = unique_sleep()
    yield sleep
    for pid in host_processes(sleep):
        os.kill(pid, signal.SIGKILL)


def detach(sleep: str) -> str:
    """Shell text starting `sleep` in its own session and waiting until it has started: the
    detached shell writes to a FIFO just before it `exec`s the sleep (no `pgrep`: under
    Landlock a command cannot read `/proc`)."""
    return (
        f"mkfifo .up; setsid sh -c 'echo up > .up; exec {sleep}' > /dev/null 2>&1 & "
        "read line < .up; rm .up"
    )
