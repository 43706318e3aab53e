"""The bash tool's OS sandbox, through the real BashTool: what a command must not reach, the
limits that must hold, and ordinary work that must still run. Each probe runs in every sandbox
mode this machine supports (bubblewrap, Landlock); a mode that cannot run is skipped with the
probe's reason."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from harness.agent.session import SessionLine, SessionStore
from harness.fleet.embedded_redis import EmbeddedRedis
from harness.llm.types import Message
from harness.state_dir import redis_dir, redis_password
from harness.tools import ShellPolicy, ToolContext, ToolOutcome, default_registry
from harness.tools.sandbox import SandboxSetting, sandbox_mode, unavailable_reason
from tests.waiting import wait_until

from .conftest import detach, host_processes, run

REFUSED = ("No such file or directory", "Permission denied")
"""What a refused path looks like: absent under bwrap, denied under Landlock."""


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


def refused(outcome: ToolOutcome, path: str) -> bool:
    """True if the command's output says `path` could not be reached."""
    return any(
        f"{path}': {why}" in outcome.content or f"{path}: {why}" in outcome.content
        for why in REFUSED
    )


def test_sandbox_hides_the_real_home(workspace: Path, mode: SandboxSetting) -> None:
    home = Path.home()
    entries = [entry.name for entry in home.iterdir()]
    assert entries, "the test needs a non-empty home"

    outcome = run(workspace, f"ls -A {home}", ShellPolicy(mode))

    assert outcome.is_error
    assert refused(outcome, str(home)), outcome.content
    assert not any(f"\n{name}\n" in f"\n{outcome.content}" for name in entries)


def test_sandbox_home_is_inside_the_workspace(workspace: Path, mode: SandboxSetting) -> None:
    outcome = run(workspace, "echo $HOME; touch ~/made", ShellPolicy(mode))

    assert outcome == ToolOutcome(f"{workspace / '.home'}\n\n[exit code 0]")
    assert (workspace / ".home" / "made").exists()


def test_sandbox_hides_the_projects_env_and_state_folder(
    project: Path, workspace: Path, mode: SandboxSetting
) -> None:
    outcome = run(workspace, "cat ../.env; cat ../state/dump.rdb; ls -A ..", ShellPolicy(mode))

    assert refused(outcome, "../.env"), outcome.content
    assert refused(outcome, "../state/dump.rdb"), outcome.content
    assert "sk-planted-env" not in outcome.content
    assert "planted-state" not in outcome.content
    assert ".env" not in outcome.content.replace("../.env", "")


_WORKER = """
import sys
from pathlib import Path
from harness.tools import ShellPolicy, ToolContext, default_registry
registry = default_registry(allow_shell=True, shell_policy=ShellPolicy(sys.argv[2]))
command = "cat /proc/$PPID/environ; cat /proc/1/environ; cat /proc/*/environ; env"
ctx = ToolContext(Path(sys.argv[1]), allow_shell=True)
print(registry.execute("bash", {"command": command}, ctx).content)
"""


def test_sandbox_hides_the_workers_environment_from_proc(
    workspace: Path, mode: SandboxSetting
) -> None:
    # Given a worker process started with a secret in its environment (as API keys are)
    env = {**os.environ, "HARNESS_TEST_SECRET": "plant-xyz"}

    # When its bash tool reads every environ it can see
    done = subprocess.run(
        [sys.executable, "-c", _WORKER, str(workspace), mode],
        env=env,
        capture_output=True,
        timeout=60,
    )

    # Then the secret is not among them
    assert done.returncode == 0, done.stderr.decode()
    assert b"PATH=" in done.stdout, "the command ran and printed its own environment"
    assert b"plant-xyz" not in done.stdout


def test_sandbox_hides_other_processes(workspace: Path, mode: SandboxSetting) -> None:
    env = {**os.environ, "HARNESS_TEST_SECRET": "plant-xyz"}
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        command = f"cat /proc/{other.pid}/environ; cat /proc/*/environ"
        outcome = run(workspace, command, ShellPolicy(mode))
    finally:
        other.kill()
        other.wait()

    assert "plant-xyz" not in outcome.content


@contextmanager
def _greeting(server: socket.socket, greeting: bytes) -> Iterator[None]:
    """Greet every connection to the listening `server` with `greeting`, then hang up, on a
    thread, until the block ends; then close the server."""
    server.settimeout(0.1)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            connection.sendall(greeting)
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        server.close()


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections (and counts them)."""
    server = socket.create_server(("127.0.0.1", 0))
    with _greeting(server, b"hello from the host\n"):
        yield server.getsockname()[1]


def test_sandbox_without_network_cannot_reach_a_host_port(
    workspace: Path, listener: int, mode: SandboxSetting
) -> None:
    command = f"exec 3<>/dev/tcp/127.0.0.1/{listener} && cat <&3"

    outcome = run(workspace, command, ShellPolicy(mode, network=False))

    assert outcome.is_error, f"expected a refused connection, got {outcome.content!r}"
    assert "hello from the host" not in outcome.content


def test_sandbox_with_network_reaches_a_host_port(
    workspace: Path, listener: int, mode: SandboxSetting
) -> None:
    outcome = run(workspace, f"exec 3<>/dev/tcp/127.0.0.1/{listener} && cat <&3", ShellPolicy(mode))

    assert "hello from the host" in outcome.content


@pytest.fixture
def daemon_socket(project: Path) -> Iterator[Path]:
    """A Unix socket outside the workspace that answers anyone (as Docker's or systemd's do)."""
    path = project / "daemon.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    with _greeting(server, b"hello from the daemon\n"):
        yield path


def test_sandbox_cannot_reach_a_unix_socket_outside(
    workspace: Path, daemon_socket: Path, mode: SandboxSetting
) -> None:
    script = (
        "import socket; s = socket.socket(socket.AF_UNIX); "
        f"s.connect({str(daemon_socket)!r}); print(s.recv(100))"
    )

    outcome = run(workspace, f'python3 -c "{script}"', ShellPolicy(mode))

    assert outcome.is_error
    assert "hello from the daemon" not in outcome.content
    assert any(why in outcome.content for why in REFUSED), outcome.content


def test_landlock_without_network_refuses_udp_too(workspace: Path) -> None:
    if sandbox_mode("landlock", network=False) != "landlock":
        pytest.skip(f"no Landlock TCP rules here: {unavailable_reason(ShellPolicy('landlock'))}")
    script = "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"

    outcome = run(workspace, f'python3 -c "{script}"', ShellPolicy("landlock", network=False))

    assert outcome.is_error
    assert "PermissionError: [Errno 13] Permission denied" in outcome.content


def test_sandbox_cannot_hard_link_a_file_from_outside(
    project: Path, workspace: Path, mode: SandboxSetting
) -> None:
    outcome = run(workspace, f"ln {project / '.env'} stolen.env", ShellPolicy(mode))

    assert outcome.is_error
    assert not (workspace / "stolen.env").exists()


def test_sandbox_kills_setsid_survivors_when_the_command_returns(
    workspace: Path, survivor: str, mode: SandboxSetting
) -> None:
    outcome = run(workspace, f"{detach(survivor)}; echo started", ShellPolicy(mode))

    assert outcome.content == "started\n\n[exit code 0]"
    wait_until(lambda: not host_processes(survivor), f"{survivor!r} to be gone after the call")


def test_sandbox_kills_setsid_survivors_on_timeout(
    workspace: Path, survivor: str, mode: SandboxSetting
) -> None:
    registry = default_registry(allow_shell=True, shell_policy=ShellPolicy(mode))
    command = f"{detach(survivor)}; echo started; sleep 30"
    outcomes: list[ToolOutcome] = []
    call = threading.Thread(
        target=lambda: outcomes.append(
            registry.execute(
                "bash", {"command": command, "timeout": 2}, ToolContext(workspace, allow_shell=True)
            )
        )
    )

    call.start()
    wait_until(lambda: host_processes(survivor), f"{survivor!r} to run during the call")
    call.join(timeout=60)

    assert outcomes, "the call returned"
    assert outcomes[0].content.startswith("started\n"), outcomes[0].content
    assert "timed out after 2 s" in outcomes[0].content
    wait_until(lambda: not host_processes(survivor), f"{survivor!r} to be gone after the timeout")


def test_sandbox_stops_a_disk_filler_at_the_file_size_limit(
    workspace: Path, mode: SandboxSetting
) -> None:
    outcome = run(workspace, "yes > big.txt", ShellPolicy(mode, max_file_mb=1))

    assert outcome.is_error
    assert "SIGXFSZ" in outcome.content
    assert (workspace / "big.txt").stat().st_size <= 1024 * 1024


def test_sandbox_limits_memory(workspace: Path, mode: SandboxSetting) -> None:
    command = "python3 -c 'x = bytearray(512 * 1024 * 1024)'"

    outcome = run(workspace, command, ShellPolicy(mode, max_memory_mb=256))

    assert outcome.is_error
    assert "MemoryError" in outcome.content


def test_bwrap_hides_private_folders_left_in_the_workspace(workspace: Path) -> None:
    if sandbox_mode("bwrap") != "bwrap":
        pytest.skip(f"bwrap cannot run here: {unavailable_reason(ShellPolicy('bwrap'))}")
    (workspace / "sessions").mkdir()
    (workspace / "sessions" / "other-chat.jsonl").write_text("planted-transcript")
    (workspace / ".harness" / "redis").mkdir(parents=True)
    (workspace / ".harness" / "redis" / "url").write_text("planted-redis-url")

    command = "grep -r planted . ; ls -A sessions .harness; echo done"
    outcome = run(workspace, command, ShellPolicy("bwrap"))

    assert outcome.content.endswith("done\n\n[exit code 0]"), "the command ran"
    assert "planted-transcript" not in outcome.content
    assert "planted-redis-url" not in outcome.content
    assert "other-chat" not in outcome.content
    assert (workspace / "sessions" / "other-chat.jsonl").exists(), "the host copy is untouched"


def test_landlock_refuses_to_run_beside_private_folders_in_the_workspace(
    workspace: Path,
) -> None:
    if sandbox_mode("landlock") != "landlock":
        pytest.skip(f"Landlock cannot run here: {unavailable_reason(ShellPolicy('landlock'))}")
    (workspace / "sessions").mkdir()
    (workspace / "sessions" / "other-chat.jsonl").write_text("planted-transcript")

    outcome = run(workspace, "touch ran; cat sessions/*", ShellPolicy("landlock"))

    assert outcome.is_error
    assert "private folder sessions/ is not empty" in outcome.content
    assert "planted-transcript" not in outcome.content
    assert not (workspace / "ran").exists()


def _chats(project: Path) -> tuple[Path, Path]:
    """Two chats' transcripts in the fleet's private folder, as the agent stores them."""
    store = SessionStore(project / "state")
    store.append("telegram-1", [SessionLine(message=Message.user("own-secret-words"))])
    store.append("telegram-2", [SessionLine(message=Message.user("other-chat-secret"))])
    return store.path_for("telegram-1"), store.path_for("telegram-2")


def test_sandbox_reads_its_own_transcript_but_not_another_chats(
    project: Path, workspace: Path, mode: SandboxSetting
) -> None:
    own, other = _chats(project)

    command = f'cat "$SESSION_TRANSCRIPT"; cat {other}; grep -r secret {other.parent}; echo done'
    outcome = run(workspace, command, ShellPolicy(mode), transcript=own)

    assert "own-secret-words" in outcome.content
    assert "other-chat-secret" not in outcome.content
    assert refused(outcome, str(other)), outcome.content


def test_sandbox_cannot_change_its_own_transcript(
    project: Path, workspace: Path, mode: SandboxSetting
) -> None:
    own, _ = _chats(project)
    before = own.read_bytes()

    outcome = run(workspace, 'echo forged >> "$SESSION_TRANSCRIPT"', ShellPolicy(mode), own)

    assert outcome.is_error
    assert own.read_bytes() == before


def test_sandbox_runs_python(workspace: Path, mode: SandboxSetting) -> None:
    outcome = run(workspace, "python3 -c 'print(1)'", ShellPolicy(mode))

    assert outcome == ToolOutcome("1\n\n[exit code 0]")


def test_sandbox_runs_git_in_the_workspace(workspace: Path, mode: SandboxSetting) -> None:
    command = "git init -q && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x"

    outcome = run(workspace, f"{command} && git log --format=%s", ShellPolicy(mode))

    assert outcome == ToolOutcome("x\n\n[exit code 0]")
    assert (workspace / ".git").is_dir()


def test_sandbox_runs_pip(workspace: Path, mode: SandboxSetting) -> None:
    outcome = run(workspace, "python3 -m pip --version", ShellPolicy(mode))

    assert outcome.content.startswith("pip "), outcome.content


def test_sandbox_runs_grep_over_the_workspace(workspace: Path, mode: SandboxSetting) -> None:
    (workspace / "notes").mkdir()
    (workspace / "notes" / "a.txt").write_text("needle\n")

    outcome = run(workspace, "grep -r needle notes", ShellPolicy(mode))

    assert outcome == ToolOutcome("notes/a.txt:needle\n\n[exit code 0]")


def test_sandbox_off_runs_commands_on_the_host(workspace: Path, project: Path) -> None:
    outcome = run(workspace, "cat ../.env", ShellPolicy("off"))

    assert "sk-planted-env" in outcome.content


@pytest.fixture
def fleet_redis(project: Path) -> Iterator[EmbeddedRedis]:
    """The fleet's embedded Redis, password from the state folder, as `harness start` runs it."""
    state = project / "state"
    server = EmbeddedRedis(redis_dir(state), password=redis_password(state)).start()
    yield server
    server.stop()


def test_sandbox_cannot_use_the_fleets_redis(
    workspace: Path, fleet_redis: EmbeddedRedis, mode: SandboxSetting
) -> None:
    # With the host network the port is reachable (Landlock cannot refuse one port), so the
    # password, kept in the state folder the sandbox cannot read, is what holds.
    command = (
        f"exec 3<>/dev/tcp/127.0.0.1/{fleet_redis.port} && "
        "printf 'DBSIZE\\r\\nSET planted 1\\r\\n' >&3 && timeout 5 head -n 2 <&3"
    )

    outcome = run(workspace, command, ShellPolicy(mode))

    assert outcome.content.count("NOAUTH") == 2, outcome.content
    client = redis.Redis.from_url(fleet_redis.url)
    try:
        assert client.get("planted") is None
    finally:
        client.close()
