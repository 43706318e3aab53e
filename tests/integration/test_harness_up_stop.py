"""Stopping `harness up` as people do: Ctrl-C with its output piped into `tee`, Ctrl-C twice,
a worker that dies at start-up on a bad setting, a port already taken. Each time every process
the fleet started must be gone within 10 s and the port free. And what stops them: the slim
supervisor `harness up` becomes (`harness.fleet.up`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.fleet import process_tree
from harness.fleet.embedded_redis import free_port
from harness.fleet.process_tree import Proc
from harness.fleet.up import MODULE, PLAN_FD_ENV
from tests.fakes.model_server import ModelServer
from tests.integration.conftest import ROOT, up_env, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(360)]

STOPPED_WITHIN_S = 10.0
SUPERVISOR_MAX_MB = 40.0
"""Far above the ~16 MB the slim supervisor holds, below the CLI's 74 (redis-py alone is 26)."""
START_WITHIN_S = 120.0  # a whole fleet of Python processes, on a busy machine


@dataclass
class PipedUp:
    """`harness up` whose stdout and stderr go into `tee up.log`, both in one process group
    (as a shell puts a pipeline in the terminal's foreground), and every process seen below
    `harness up` while it ran."""

    up: subprocess.Popen[bytes]
    reader: subprocess.Popen[bytes]
    log: Path
    port: int
    seen: set[Proc] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def watch(self) -> None:
        """Note every descendant of `harness up`, until `forget`: the orphans too, whose link
        to `harness up` is lost when their parent dies."""
        while not self._stop.wait(0.05):
            self.seen |= process_tree.descendants(self.up.pid)

    def forget(self) -> None:
        self._stop.set()

    def left(self) -> list[Proc]:
        return sorted(process_tree.living(self.seen), key=lambda p: p.pid)

    def press_ctrl_c(self) -> None:
        """SIGINT to the foreground group: `harness up` and its reader together (the group
        outlives its leader while `harness up` runs)."""
        os.killpg(self.reader.pid, signal.SIGINT)


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _project(tmp_path: Path, dotenv_extra: str = "") -> Path:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / ".env.example", project / ".env")
    with (project / ".env").open("a") as dotenv:
        dotenv.write(dotenv_extra)
    return project


def _start(project: Path, model_server: ModelServer, log: Path) -> PipedUp:
    port = free_port()
    env = up_env() | {
        "ANTHROPIC_API_KEY": model_server.api_key,
        "ANTHROPIC_BASE_URL": model_server.url,
        "PORT": str(port),
        "WORKER_CONCURRENCY": "2",
    }
    # A process group of their own (in this session, so `harness up` can join it)
    reader = subprocess.Popen(
        ["tee", str(log)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, process_group=0
    )
    up = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "up"], cwd=project, env=env,
        stdin=subprocess.DEVNULL, stdout=reader.stdin, stderr=subprocess.STDOUT,
        process_group=reader.pid,
    )  # fmt: skip
    assert reader.stdin is not None
    reader.stdin.close()  # `harness up` holds the only write end
    running = PipedUp(up, reader, log, port)
    threading.Thread(target=running.watch, daemon=True).start()
    return running


@contextlib.contextmanager
def _running(project: Path, model_server: ModelServer, log: Path) -> Iterator[PipedUp]:
    """`harness up` in `project` piped into `tee`; whatever is left of it is killed after."""
    running = _start(project, model_server, log)
    try:
        yield running
    finally:
        running.forget()
        for process in running.left():
            process_tree.signal_process(process, signal.SIGKILL)
        for proc in (running.up, running.reader):
            if proc.poll() is None:
                proc.kill()
            proc.wait()


@pytest.fixture
def piped(tmp_path: Path, model_server: ModelServer) -> Iterator[PipedUp]:
    """A fresh `harness up` piped into `tee`."""
    with _running(_project(tmp_path), model_server, tmp_path / "up.log") as running:
        yield running


def _wait_until_serving(piped: PipedUp) -> None:
    wait_until(
        lambda: (
            "ready: chat with `harness chat`" in piped.output()
            and "sidecar ready:" in piped.output()  # its one line: the child runs
        ),
        timeout=START_WITHIN_S,
        what=f"the fleet to be ready with a sidecar child (harness up exit code "
        f"{piped.up.poll()}, processes seen: {len(piped.seen)})\n{piped.output()}",
    )


def _assert_all_gone(piped: PipedUp) -> None:
    wait_until(
        lambda: piped.up.poll() is not None and not piped.left(),
        timeout=STOPPED_WITHIN_S,
        what=f"`harness up` and every process it started to be gone (left: {piped.left()})\n"
        f"{piped.output()[-4000:]}",
    )
    piped.forget()
    assert _port_free(piped.port), f"port {piped.port} still held\n{piped.output()[-4000:]}"


@pytest.mark.parametrize("tee_first", [False, True], ids=["together", "tee-first"])
def test_harness_up_piped_into_tee_stops_everything_on_ctrl_c(
    piped: PipedUp, tee_first: bool
) -> None:
    # Given a serving fleet whose output goes through `tee`
    _wait_until_serving(piped)
    # (the scheduler and the sidecar run on threads of the worker; the sidecar's executor is
    # a process)
    assert len(piped.seen) >= 4, f"expected web, worker, executor, Redis: {piped.seen}"
    # When Ctrl-C reaches `harness up` and `tee` at once, so writing the output fails (or
    # `tee` happened to exit first, the order a terminal does not promise)
    if tee_first:
        piped.reader.send_signal(signal.SIGINT)
        piped.reader.wait(timeout=STOPPED_WITHIN_S)
    piped.press_ctrl_c()
    # Then every process is gone within 10 s and the port is free
    _assert_all_gone(piped)
    assert piped.up.returncode != 0


def test_harness_up_second_ctrl_c_kills_and_still_leaves_nothing(piped: PipedUp) -> None:
    # Given a serving fleet, stopping after a first Ctrl-C
    _wait_until_serving(piped)
    seen = set(piped.seen)
    piped.press_ctrl_c()
    wait_until(
        lambda: len(process_tree.living(seen)) < len(seen),
        timeout=STOPPED_WITHIN_S,
        what="a first process to stop",
    )
    # When Ctrl-C comes again (only `harness up` is left in the group)
    if piped.up.poll() is None:
        piped.up.send_signal(signal.SIGINT)
    # Then every process is gone within 10 s and the port is free
    _assert_all_gone(piped)


def test_harness_up_exits_when_a_worker_fails_at_start_up_naming_the_setting(
    tmp_path: Path, model_server: ModelServer
) -> None:
    # Given a .env naming a function module that does not exist
    project = _project(tmp_path, "\nHARNESS_FUNCTION_MODULES=no_such_module_for_the_test\n")
    with _running(project, model_server, tmp_path / "up.log") as piped:
        # When `harness up` starts and the worker dies loading it
        wait_until(
            lambda: piped.up.poll() is not None,
            timeout=START_WITHIN_S,
            what=f"`harness up` to exit\n{piped.output()}",
        )
        # Then it exits non-zero, having printed a line naming the variable
        _assert_all_gone(piped)
        assert piped.up.returncode != 0
        lines = [
            line
            for line in piped.output().splitlines()
            if "HARNESS_FUNCTION_MODULES" in line and "no_such_module_for_the_test" in line
        ]
        assert lines, piped.output()
        # And it sent each kill once
        assert piped.output().count("sending SIGKILL to sidecar") <= 1, piped.output()


def test_harness_up_refuses_a_port_in_use_and_names_port(tmp_path: Path) -> None:
    # Given another server holding the port
    project = _project(tmp_path)
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        # When `harness up` is asked to serve on it
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "up", "--port", str(port)],
            cwd=project, env=up_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    # Then it exits non-zero with one line naming PORT, having started nothing
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "PORT" in errors[0] and str(port) in errors[0], done.stderr
    assert "started (pid" not in done.stdout, done.stdout
    assert not (project / ".harness" / "redis").exists()


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return int(next(line.split()[1] for line in status if line.startswith("VmRSS:"))) / 1024


def test_harness_up_supervises_in_a_slim_process_that_passes_on_no_secret(
    piped: PipedUp, tmp_path: Path
) -> None:
    # Given a serving fleet
    _wait_until_serving(piped)
    # Then its process (the same pid) became the slim supervisor, holding a fraction of the CLI
    assert f"-m {MODULE}" in _cmdline(piped.up.pid), _cmdline(piped.up.pid)
    assert _rss_mb(piped.up.pid) < SUPERVISOR_MAX_MB, f"{_rss_mb(piped.up.pid):.1f} MB"
    # And the Redis password is on no command line, and the plan's descriptor reached no
    # process of the fleet
    redis_dir = tmp_path / "project" / ".harness" / "redis"
    password = (redis_dir / "password").read_text().strip()
    for process in process_tree.living(piped.seen):
        assert password not in _cmdline(process.pid), _cmdline(process.pid)
        environ = Path(f"/proc/{process.pid}/environ").read_bytes()
        assert PLAN_FD_ENV.encode() not in environ, _cmdline(process.pid)
    # When Ctrl-C reaches `harness up` alone (its reader keeps reading)
    piped.up.send_signal(signal.SIGINT)
    # Then every process is gone, it exits as after Ctrl-C, and the embedded Redis persisted
    # its data and withdrew its URL
    _assert_all_gone(piped)
    assert piped.up.returncode == 130, piped.output()[-4000:]
    assert any(f.stat().st_size for f in redis_dir.rglob("appendonly*") if f.is_file())
    assert not (redis_dir / "url").exists()
