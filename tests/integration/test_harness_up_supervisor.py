"""`harness up` end to end once its process became the slim supervisor (`harness.fleet.up`):
the same pid says `ready:`, holds a fraction of the CLI's memory, shows no password and hands
none down, and Ctrl-C leaves nothing running, with the Redis data written."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness.fleet import process_tree
from harness.fleet.embedded_redis import free_port
from harness.fleet.process_tree import Proc
from harness.fleet.up import MODULE, PLAN_FD_ENV
from tests.integration.conftest import ROOT, up_env, wait_until
from tests.processes import interrupt

pytestmark = [pytest.mark.integration, pytest.mark.timeout(360)]

SUPERVISOR_MAX_MB = 40.0
"""Far above the ~16 MB it holds, far below the CLI's 74 (redis-py alone is 26)."""


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    kb = next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(kb) / 1024


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_harness_up_supervises_in_a_slim_process_and_leaves_nothing_after_ctrl_c(
    tmp_path: Path,
) -> None:
    # Given a fresh project (`.env` copied from `.env.example`) and `harness up` started in it
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / ".env.example", project / ".env")
    env = up_env() | {"PORT": str(free_port()), "XDG_STATE_HOME": str(tmp_path / "state")}
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        up = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "up"],
            cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    seen: set[Proc] = set()
    done = threading.Event()

    def watch() -> None:  # every descendant, the orphans too, until the end
        while not done.wait(0.05):
            seen.update(process_tree.descendants(up.pid))

    threading.Thread(target=watch, daemon=True).start()
    try:
        # When the fleet is ready
        wait_until(
            lambda: "| ready: " in log.read_text(errors="replace") or up.poll() is not None,
            timeout=180,
            what="`harness up` to say ready",
        )
        output = log.read_text(errors="replace")
        assert up.poll() is None, output
        # Then its process (same pid) is the slim supervisor, holding a fraction of the CLI's
        assert f"-m {MODULE}" in _cmdline(up.pid), _cmdline(up.pid)
        assert _rss_mb(up.pid) < SUPERVISOR_MAX_MB, f"{_rss_mb(up.pid):.1f} MB"
        # And the Redis password is on no command line, and the plan's descriptor reached no
        # process of the fleet
        password = (project / ".harness" / "redis" / "password").read_text().strip()
        for process in process_tree.living(seen):
            assert password not in _cmdline(process.pid), _cmdline(process.pid)
            environ = Path(f"/proc/{process.pid}/environ").read_bytes()
            assert PLAN_FD_ENV.encode() not in environ, _cmdline(process.pid)
        assert password not in output
        # When Ctrl-C reaches it
        up.send_signal(signal.SIGINT)
        code = up.wait(timeout=60)
        done.set()
        # Then it exits as after Ctrl-C, every process it started is gone, and the embedded
        # Redis wrote its data, withdrew its URL, and the fleet its record
        output = log.read_text(errors="replace")
        assert code == 130, output
        assert len(seen) >= 3 and not process_tree.living(seen), process_tree.living(seen)
        data = project / ".harness" / "redis"
        assert any(f.stat().st_size > 0 for f in data.rglob("appendonly*") if f.is_file()), output
        assert not (data / "url").exists()
        assert not list((tmp_path / "state" / "harness" / "fleets").glob("*.json"))
    finally:
        done.set()
        for process in process_tree.living(seen):
            process_tree.signal_process(process, signal.SIGKILL)
        interrupt(up, timeout=40)
