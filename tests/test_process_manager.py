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

# A sidecar that ignores SIGTERM (busy stopping its own children), whose child, in a session
# of its own, ignores it too and holds the output pipe.
STUBBORN_PARENT = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
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


def test_process_manager_honours_sigterm_while_stopping_after_a_worker_died_at_start_up(
    tmp_path: Path,
) -> None:
    # Given a sidecar and its child that both ignore SIGTERM, the child holding the output
    # pipe, and a worker that dies at start-up once that child is up (issue 32: `harness up`
    # printed `sending SIGKILL to sidecar` 5,840 times and ignored SIGTERM)
    pidfile = tmp_path / "stray.pid"
    output = io.StringIO()
    manager = ProcessManager(Printer(output), grace_s=600.0)  # only a signal can cut it short
    stray, parent = _script(tmp_path, "stray", STRAY), _script(tmp_path, "p", STUBBORN_PARENT)
    manager.add("sidecar", f"exec {PYTHON} {parent} {stray} {shlex.quote(str(pidfile))}")
    failing = _script(tmp_path, "failing", FAILS_ONCE_STRAY_IS_UP)
    manager.add("worker", f"{PYTHON} {failing} {shlex.quote(str(pidfile))}")

    def terminate_once_stopping() -> None:
        wait_until(lambda: "sending SIGTERM to sidecar" in output.getvalue(), what="the stop")
        os.kill(os.getpid(), signal.SIGTERM)

    terminator = threading.Thread(target=terminate_once_stopping, daemon=True)
    terminator.start()
    # When the worker dies, the fleet starts stopping, and SIGTERM arrives while it waits
    code = manager.loop()
    terminator.join(timeout=10)
    # Then the loop returned (SIGTERM cut the grace short) with the worker's code, the
    # sidecar and its child are gone, and each kill and each stop was said once
    text = output.getvalue()
    assert code == 3, text
    assert "SIGTERM received: killing the fleet" in text, text
    stray_pid = int(pidfile.read_text())
    wait_until(lambda: _gone(stray_pid), what=f"the stray {stray_pid} to be gone\n{text}")
    assert text.count("sending SIGKILL to sidecar") == 1, text
    assert text.count(f"started elsewhere: pid {stray_pid}") == 1, text
    assert text.count("sidecar stopped") == 1 and text.count("worker stopped") == 1, text


def test_process_manager_says_which_signal_ended_a_process_and_which_code_another(
    tmp_path: Path,
) -> None:
    # Given two processes: one a SIGTERM ends (as a server that re-raises it), one that
    # exits with a code of its own once the fleet stops
    output = io.StringIO()
    manager = ProcessManager(Printer(output), grace_s=30.0)
    manager.add("web", f"{PYTHON} -c 'import time; time.sleep(300)'")
    manager.add("quits", f"{PYTHON} -c 'import sys; sys.exit(3)'")
    # When the second exits, which stops the fleet
    code = manager.loop()
    # Then each stop line says how that process ended: a signal by its name, not `rc=-15`
    text = output.getvalue()
    assert code == 3, text
    assert "quits stopped (rc=3)" in text, text
    assert "web stopped (on SIGTERM)" in text and "rc=-15" not in text, text
