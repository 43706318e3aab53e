"""The fleet's process manager: it stops every process it started, trees included, once each,
however its output and its processes behave."""

from __future__ import annotations

import io
import os
import shlex
import signal
import sys
import threading
from pathlib import Path

import pytest
from honcho.printer import Printer

from harness.fleet.process_manager import ProcessManager
from tests.waiting import wait_until

pytestmark = pytest.mark.timeout(120)

PYTHON = shlex.quote(sys.executable)

# Started in a session of its own (as the sidecar starts its children), ignoring SIGTERM,
# holding the output pipe it inherited; writes its pid once up.
STRAY = """
import os, pathlib, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("stray up", flush=True)
pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))
time.sleep(300)
"""

PARENT = """
import subprocess, sys, time
subprocess.Popen([sys.executable, sys.argv[1], sys.argv[2]], start_new_session=True)
time.sleep(300)
"""

FAILS_ONCE_STRAY_IS_UP = """
import pathlib, sys, time
while not pathlib.Path(sys.argv[1]).exists():
    time.sleep(0.02)
print("error: cannot load function module 'nope' (HARNESS_FUNCTION_MODULES)", flush=True)
sys.exit(3)
"""

STUBBORN = """
import pathlib, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
pathlib.Path(sys.argv[1]).write_text("up")
time.sleep(300)
"""


def _script(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return shlex.quote(str(path))


def _gone(pid: int) -> bool:
    """True when `pid` no longer runs (a zombie counts as gone: it holds nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def test_process_manager_kills_a_stray_grandchild_that_holds_the_output_pipe(
    tmp_path: Path,
) -> None:
    # Given a parent that starts a child in a session of its own, which ignores SIGTERM and
    # holds the output pipe, and a process that fails once that child is up
    pidfile = tmp_path / "stray.pid"
    stray = _script(tmp_path, "stray", STRAY)
    output = io.StringIO()
    manager = ProcessManager(Printer(output), grace_s=2.0)
    parent = _script(tmp_path, "parent", PARENT)
    manager.add("sidecar", f"{PYTHON} {parent} {stray} {shlex.quote(str(pidfile))}")
    failing = _script(tmp_path, "failing", FAILS_ONCE_STRAY_IS_UP)
    manager.add("worker", f"{PYTHON} {failing} {shlex.quote(str(pidfile))}")
    # When the failing process exits
    code = manager.loop()
    # Then the manager returns its code, having printed its last line
    text = output.getvalue()
    assert code == 3, text
    assert "HARNESS_FUNCTION_MODULES" in text, text
    # And the stray grandchild is gone too, killed once
    stray_pid = int(pidfile.read_text())
    wait_until(lambda: _gone(stray_pid), what=f"the stray {stray_pid} to be gone\n{text}")
    assert text.count(f"SIGKILL to what the processes started elsewhere: pid {stray_pid}") == 1, (
        text
    )


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_process_manager_second_signal_kills_at_once(
    tmp_path: Path, signum: signal.Signals
) -> None:
    # Given a process that ignores SIGTERM, under a manager whose grace outlasts the test
    ready = tmp_path / "ready"
    output = io.StringIO()
    manager = ProcessManager(Printer(output), grace_s=600.0)
    manager.add("stubborn", f"{PYTHON} {_script(tmp_path, 'stubborn', STUBBORN)} {ready}")

    def press_twice() -> None:
        wait_until(ready.exists, what="the stubborn process to start", timeout=60)
        os.kill(os.getpid(), signum)
        wait_until(lambda: "stopping the fleet" in output.getvalue(), what="the first stop")
        os.kill(os.getpid(), signum)

    presser = threading.Thread(target=press_twice, daemon=True)
    presser.start()
    # When the signal comes twice (Ctrl-C twice, or SIGTERM twice)
    code = manager.loop()
    presser.join(timeout=10)
    # Then the second one killed the process without waiting out the grace
    text = output.getvalue()
    assert code == 128 + signum, text
    assert f"{signum.name} received: killing the fleet" in text, text
    assert text.count("sending SIGKILL to stubborn") == 1, text


def test_process_manager_stops_everything_when_its_output_breaks(tmp_path: Path) -> None:
    # Given a manager printing into a pipe whose reader has exited
    read_end, write_end = os.pipe()
    os.close(read_end)
    broken = os.fdopen(write_end, "w")
    manager = ProcessManager(Printer(broken), grace_s=2.0)
    pidfile = tmp_path / "sleeper.pid"
    script = (
        f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(300)"
    )
    manager.add("sleeper", f"exec {PYTHON} -c {shlex.quote(script)}")
    try:
        # When it runs (its first line fails with EPIPE)
        code = manager.loop()
    finally:
        try:
            broken.close()
        except BrokenPipeError:
            pass
    # Then it stopped the process instead of raising or hanging, and says why in its code
    assert manager.output_broken
    assert code == 128 + signal.SIGPIPE
    if pidfile.exists():
        assert _gone(int(pidfile.read_text()))
