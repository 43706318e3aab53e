"""A fleet for benchmarks as a user runs it, and its memory: `harness up` in a fresh project
folder with default settings (no `.env`; its embedded Redis, web, worker, scheduler and the
sidecar) plus what a benchmark passes, and the resident memory of it and every process it
started, read from `/proc`.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from bench.stats import cpu_seconds
from harness.fleet.embedded_redis import free_port
from harness.fleet.process_tree import descendants
from tests.fakes.model_server import ModelServer
from tests.processes import stop_groups

ROOT = Path(__file__).resolve().parents[1]
KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH")
"""The only variables of ours the fleet inherits: anything else could change its settings."""
START_TIMEOUT_S = 180.0
SAMPLE_S = 0.2


def fleet_rss_by_process(pid: int) -> dict[str, float]:
    """Resident memory in MB of `pid` and each of its descendants, keyed by "<pid> <command>"
    (the command shortened to what tells the processes apart: `harness.cli worker`,
    `redis-server`); processes that exit while being read are left out."""
    found = {}
    for pid_ in sorted({pid} | {p.pid for p in descendants(pid)}):
        try:
            status = Path(f"/proc/{pid_}/status").read_text()
            name = _process_name(pid_)
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                found[f"{pid_} {name}"] = int(line.split()[1]) / 1024
    return found


def fleet_cpu_by_process(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) `pid` and each of its descendants have used so far, keyed
    like `fleet_rss_by_process`; processes that exit while being read are left out. The
    difference of two readings is what the fleet's own work cost in between, whatever else
    the machine was doing meanwhile."""
    found = {}
    for pid_ in sorted({pid} | {p.pid for p in descendants(pid)}):
        try:
            found[f"{pid_} {_process_name(pid_)}"] = cpu_seconds([pid_])
        except OSError:
            continue
    return found


def _process_name(pid: int) -> str:
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    words = [Path(a.decode(errors="replace")).name for a in argv if a][:4]
    return " ".join(w for w in words if not w.startswith("python") and w != "-m")


def fleet_pss_mb(pid: int) -> float:
    """Proportional memory of `pid` and all its descendants, in MB (`/proc/<pid>/smaps_rollup`
    Pss: each shared page divided among the processes that map it, so the sum is what the
    fleet holds, where RSS counts a shared library once per process); 0 where unreadable."""
    total_kb = 0
    for pid_ in {pid} | {p.pid for p in descendants(pid)}:
        try:
            lines = Path(f"/proc/{pid_}/smaps_rollup").read_text().splitlines()
        except OSError:
            continue
        total_kb += sum(int(line.split()[1]) for line in lines if line.startswith("Pss:"))
    return total_kb / 1024


def fleet_rss_mb(pid: int) -> float:
    """Resident memory of `pid` and all its descendants, in MB (pages shared between
    processes count once per process, as `ps` shows them)."""
    return sum(fleet_rss_by_process(pid).values())


class RssSampler:
    """Samples `fleet_rss_mb(pid)` every `SAMPLE_S` in a thread of its own; `peak` is the
    largest sample so far."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, fleet_rss_mb(self.pid))
            self._stop.wait(SAMPLE_S)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, fleet_rss_mb(self.pid))


@dataclass(frozen=True)
class RunningFleet:
    """A `harness up` process, the base URL of its web server and its API key."""

    process: subprocess.Popen[bytes]
    url: str
    api_key: str
    log: Path


@contextmanager
def harness_up(
    model: ModelServer, extra_env: dict[str, str], folder: Path
) -> Iterator[RunningFleet]:
    """`harness up` in `folder` with default settings plus `extra_env`, talking to `model`;
    yields once `/readyz` answers 200; stops the fleet (SIGTERM, then SIGKILL of its group
    after 60 s)."""
    port, api_key = free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k in KEPT_ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env |= {
        "ANTHROPIC_API_KEY": model.api_key,
        "ANTHROPIC_BASE_URL": model.url,
        "HARNESS_API_KEY": api_key,
        "PORT": str(port),
        **extra_env,
    }
    log = folder / "up.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "up"],
            cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    fleet = RunningFleet(process, f"http://127.0.0.1:{port}", api_key, log)
    try:
        _wait_ready(fleet)
        yield fleet
    finally:
        stop_groups([process], timeout=60)  # `harness up` stops what it started on SIGTERM


def _wait_ready(fleet: RunningFleet) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if fleet.process.poll() is not None:
            break
        try:
            if httpx2.get(f"{fleet.url}/readyz", timeout=2).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.5)
    tail = fleet.log.read_text(errors="replace")[-3000:]
    raise RuntimeError(f"the fleet was not ready within {START_TIMEOUT_S:.0f} s:\n{tail}")
