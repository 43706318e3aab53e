"""The bash tool's OS sandbox, through the real BashTool: what a command must not reach, the
limits that must hold, and ordinary work that must still run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.tools import ShellPolicy, ToolContext, ToolOutcome, default_registry
from harness.tools.sandbox import bwrap_binary, sandbox_mode
from tests.waiting import wait_until

from .conftest import host_processes, unique_sleep

if sandbox_mode("auto") != "bwrap":
    pytest.skip(
        f"the bwrap sandbox cannot run here (bwrap: {bwrap_binary()})", allow_module_level=True
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fleet's project folder: a `.env` with a secret, a state folder, the workspace."""
    (tmp_path / ".env").write_text("ANTHROPIC_API_KEY=sk-planted-env\n")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "dump.rdb").write_text("planted-state")
    (tmp_path / "workspace").mkdir()
    return tmp_path


@pytest.fixture
def workspace(project: Path) -> Path:
    return project / "workspace"


def run(workspace: Path, command: str, policy: ShellPolicy | None = None) -> ToolOutcome:
    """Run `command` with the real bash tool through the registry, sandbox on."""
    registry = default_registry(allow_shell=True, shell_policy=policy or ShellPolicy("bwrap"))
    return registry.execute(
        "bash", {"command": command, "timeout": 30}, ToolContext(workspace, allow_shell=True)
    )


def test_sandbox_hides_the_real_home(workspace: Path) -> None:
    home = Path.home()
    assert home.is_dir() and any(home.iterdir()), "the test needs a non-empty home"

    outcome = run(workspace, f"ls -A {home}")

    assert outcome.is_error
    assert f"cannot access '{home}': No such file or directory" in outcome.content


def test_sandbox_home_is_inside_the_workspace(workspace: Path) -> None:
    outcome = run(workspace, "echo $HOME; touch ~/made")

    assert outcome == ToolOutcome(f"{workspace / '.home'}\n\n[exit code 0]")
    assert (workspace / ".home" / "made").exists()


def test_sandbox_hides_the_projects_env_and_state_folder(project: Path, workspace: Path) -> None:
    outcome = run(workspace, "cat ../.env; cat ../state/dump.rdb; ls -A ..")

    assert outcome.content == (
        "cat: ../.env: No such file or directory\n"
        "cat: ../state/dump.rdb: No such file or directory\n"
        "workspace\n\n[exit code 0]"
    )


_WORKER = """
import sys
from pathlib import Path
from harness.tools import ShellPolicy, ToolContext, default_registry
registry = default_registry(allow_shell=True, shell_policy=ShellPolicy("bwrap"))
command = "cat /proc/$PPID/environ; cat /proc/1/environ; cat /proc/*/environ; env"
ctx = ToolContext(Path(sys.argv[1]), allow_shell=True)
print(registry.execute("bash", {"command": command}, ctx).content)
"""


def test_sandbox_hides_the_workers_environment_from_proc(workspace: Path) -> None:
    # Given a worker process started with a secret in its environment (as API keys are)
    env = {**os.environ, "HARNESS_TEST_SECRET": "plant-xyz"}

    # When its bash tool reads every environ it can see
    done = subprocess.run(
        [sys.executable, "-c", _WORKER, str(workspace)], env=env, capture_output=True, timeout=60
    )

    # Then the secret is not among them
    assert done.returncode == 0, done.stderr.decode()
    assert b"PATH=" in done.stdout, "the command ran and printed its own environment"
    assert b"plant-xyz" not in done.stdout


def test_sandbox_hides_other_processes(workspace: Path) -> None:
    env = {**os.environ, "HARNESS_TEST_SECRET": "plant-xyz"}
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        outcome = run(workspace, f"cat /proc/{other.pid}/environ; cat /proc/*/environ")
    finally:
        other.kill()
        other.wait()

    assert "plant-xyz" not in outcome.content


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections (and counts them)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            connection.sendall(b"hello from the host\n")
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def test_sandbox_without_network_cannot_reach_a_host_port(workspace: Path, listener: int) -> None:
    command = f"exec 3<>/dev/tcp/127.0.0.1/{listener} && cat <&3"

    outcome = run(workspace, command, ShellPolicy("bwrap", network=False))

    assert outcome.is_error, f"expected a refused connection, got {outcome.content!r}"
    assert "hello from the host" not in outcome.content


def test_sandbox_with_network_reaches_a_host_port(workspace: Path, listener: int) -> None:
    outcome = run(workspace, f"exec 3<>/dev/tcp/127.0.0.1/{listener} && cat <&3")

    assert "hello from the host" in outcome.content


def test_sandbox_cannot_hard_link_a_file_from_outside(project: Path, workspace: Path) -> None:
    outcome = run(workspace, f"ln {project / '.env'} stolen.env")

    assert outcome.is_error
    assert not (workspace / "stolen.env").exists()


@pytest.fixture
def survivor() -> Iterator[str]:
    """A unique `sleep` command line; any host process still running it is killed afterwards."""
    sleep = unique_sleep()
    yield sleep
    for pid in host_processes(sleep):
        os.kill(pid, signal.SIGKILL)


def detach(sleep: str) -> str:
    """Shell text starting `sleep` in its own session and waiting until it runs."""
    return f"setsid {sleep} > /dev/null 2>&1 & until pgrep -fx '{sleep}' > /dev/null; do :; done"


def test_sandbox_kills_setsid_survivors_when_the_command_returns(
    workspace: Path, survivor: str
) -> None:
    outcome = run(workspace, f"{detach(survivor)}; echo started")

    assert outcome.content == "started\n\n[exit code 0]"
    wait_until(lambda: not host_processes(survivor), f"{survivor!r} to be gone after the call")


def test_sandbox_kills_setsid_survivors_on_timeout(workspace: Path, survivor: str) -> None:
    registry = default_registry(allow_shell=True, shell_policy=ShellPolicy("bwrap"))
    command = f"{detach(survivor)}; echo started; sleep 30"

    outcome = registry.execute(
        "bash", {"command": command, "timeout": 2}, ToolContext(workspace, allow_shell=True)
    )

    assert outcome.content.startswith("started\n"), outcome.content
    assert "timed out after 2 s" in outcome.content
    wait_until(lambda: not host_processes(survivor), f"{survivor!r} to be gone after the timeout")


def test_sandbox_stops_a_disk_filler_at_the_file_size_limit(workspace: Path) -> None:
    outcome = run(workspace, "yes > big.txt", ShellPolicy("bwrap", max_file_mb=1))

    assert outcome.is_error
    assert "SIGXFSZ" in outcome.content
    assert (workspace / "big.txt").stat().st_size <= 1024 * 1024


def test_sandbox_limits_memory(workspace: Path) -> None:
    command = "python3 -c 'x = bytearray(512 * 1024 * 1024)'"

    outcome = run(workspace, command, ShellPolicy("bwrap", max_memory_mb=256))

    assert outcome.is_error
    assert "MemoryError" in outcome.content


def test_sandbox_hides_sessions_and_runtime_state(workspace: Path) -> None:
    (workspace / "sessions").mkdir()
    (workspace / "sessions" / "other-chat.jsonl").write_text("planted-transcript")
    (workspace / ".harness" / "redis").mkdir(parents=True)
    (workspace / ".harness" / "redis" / "url").write_text("planted-redis-url")

    outcome = run(workspace, "grep -r planted . ; ls -A sessions .harness; echo done")

    assert "planted-transcript" not in outcome.content
    assert "planted-redis-url" not in outcome.content
    assert "other-chat" not in outcome.content
    assert (workspace / "sessions" / "other-chat.jsonl").exists(), "the host copy is untouched"


def test_sandbox_runs_python(workspace: Path) -> None:
    outcome = run(workspace, "python3 -c 'print(1)'")

    assert outcome == ToolOutcome("1\n\n[exit code 0]")


def test_sandbox_runs_git_in_the_workspace(workspace: Path) -> None:
    command = "git init -q && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x"

    outcome = run(workspace, f"{command} && git log --format=%s")

    assert outcome == ToolOutcome("x\n\n[exit code 0]")
    assert (workspace / ".git").is_dir()


def test_sandbox_runs_pip(workspace: Path) -> None:
    outcome = run(workspace, "python3 -m pip --version")

    assert outcome.content.startswith("pip "), outcome.content


def test_sandbox_runs_grep_over_the_workspace(workspace: Path) -> None:
    (workspace / "notes").mkdir()
    (workspace / "notes" / "a.txt").write_text("needle\n")

    outcome = run(workspace, "grep -r needle notes")

    assert outcome == ToolOutcome("notes/a.txt:needle\n\n[exit code 0]")


def test_sandbox_off_runs_commands_on_the_host(workspace: Path, project: Path) -> None:
    outcome = run(workspace, "cat ../.env", ShellPolicy("off"))

    assert "sk-planted-env" in outcome.content
