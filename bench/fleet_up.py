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
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from bench.periodic import PeriodicSampler
from bench.stats import cpu_seconds
from harness.fleet import fleets
from harness.fleet.embedded_redis import free_port
from harness.fleet.process_tree import descendants
from tests.fakes.model_server import ModelServer
from tests.processes import stop_groups

ROOT = Path(__file__).resolve().parents[1]
KEPT_ENV = ("PATH", "HOME", "XDG_STATE_HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH")
"""The only variables of ours the fleet inherits: anything else could change its settings."""
START_TIMEOUT_S = 180.0
SAMPLE_S = 0.2


def _tree(pids: tuple[int, ...]) -> list[int]:
    """`pids` and all their descendants, sorted."""
    return sorted(set(pids) | {p.pid for p in descendants(*pids)})


def fleet_rss_by_process(*pids: int) -> dict[str, float]:
    """Resident memory in MB of `pids` and each of their descendants, keyed by "<pid> <command>"
    (the command shortened to what tells the processes apart: `harness.cli worker`,
    `redis-server`); processes that exit while being read are left out."""
    found = {}
    for pid_ in _tree(pids):
        try:
            status = Path(f"/proc/{pid_}/status").read_text()
            name = _process_name(pid_)
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                found[f"{pid_} {name}"] = int(line.split()[1]) / 1024
    return found


def fleet_cpu_by_process(*pids: int) -> dict[str, float]:
    """CPU seconds (user + system) `pids` and each of their descendants have used so far, keyed
    like `fleet_rss_by_process`; processes that exit while being read are left out. The
    difference of two readings is what the fleet's own work cost in between, whatever else
    the machine was doing meanwhile."""
    found = {}
    for pid_ in _tree(pids):
        try:
            found[f"{pid_} {_process_name(pid_)}"] = cpu_seconds([pid_])
        except OSError:
            continue
    return found


def _process_name(pid: int) -> str:
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    words = [Path(a.decode(errors="replace")).name for a in argv if a][:4]
    return " ".join(w for w in words if not w.startswith("python") and w != "-m")


def fleet_pss_mb(*pids: int) -> float:
    """Proportional memory of `pids` and all their descendants, in MB (`/proc/<pid>/smaps_rollup`
    Pss: each shared page divided among the processes that map it, so the sum is what the
    fleet holds, where RSS counts a shared library once per process); 0 where unreadable."""
    total_kb = 0
    for pid_ in _tree(pids):
        try:
            lines = Path(f"/proc/{pid_}/smaps_rollup").read_text().splitlines()
        except OSError:
            continue
        total_kb += sum(int(line.split()[1]) for line in lines if line.startswith("Pss:"))
    return total_kb / 1024


def fleet_rss_mb(*pids: int) -> float:
    """Resident memory of `pids` and all their descendants, in MB (pages shared between
    processes count once per process, as `ps` shows them)."""
    return sum(fleet_rss_by_process(*pids).values())


class RssSampler(PeriodicSampler):
    """Samples the fleet's RSS every `SAMPLE_S` in a thread of its own; `peak` is the largest
    sum so far and `peak_by_process` each process's share in that sample (MB)."""

    def __init__(self, *pids: int) -> None:
        super().__init__(SAMPLE_S, "rss-sampler")
        self.pids = pids
        self.peak = 0.0
        self.peak_by_process: dict[str, float] = {}

    def sample(self) -> None:
        by_process = fleet_rss_by_process(*self.pids)
        total = sum(by_process.values())
        if total > self.peak:
            self.peak, self.peak_by_process = total, by_process


@dataclass(frozen=True)
class RunningFleet:
    """A `harness up` process, the base URL of its web server and its API key; `extra`, the
    `harness up --only worker` processes that joined it."""

    process: subprocess.Popen[bytes]
    url: str
    api_key: str
    log: Path
    extra: tuple[subprocess.Popen[bytes], ...] = ()

    def redis_url(self) -> str:
        """The Redis URL of the fleet (from its fleet record; it carries the password)."""
        for record in fleets.running():
            if record.pid == self.process.pid:
                return record.redis_url
        raise RuntimeError("the fleet published no record")

    @property
    def pids(self) -> tuple[int, ...]:
        """The pids of `harness up` and of each extra worker host: the roots of the fleet."""
        return (self.process.pid, *(p.pid for p in self.extra))


@contextmanager
def harness_up(
    model: ModelServer, extra_env: dict[str, str], folder: Path, extra_workers: int = 0
) -> Iterator[RunningFleet]:
    """`harness up` in `folder` with default settings plus `extra_env`, talking to `model`;
    yields once `/readyz` answers 200 and each of `extra_workers` more worker hosts (`harness
    up --only worker` in the same folder: a worker process with its model gateway, on the
    fleet's Redis) consumes; stops them all (SIGTERM, then SIGKILL of each group after
    60 s)."""
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
    extra: list[subprocess.Popen[bytes]] = []
    try:
        _wait_ready(fleet)
        for n in range(extra_workers):
            extra.append(_worker_host(folder, env, folder / f"worker-{n}.log"))
        fleet = RunningFleet(process, fleet.url, api_key, log, tuple(extra))
        yield fleet
    finally:
        # `harness up` stops what it started on SIGTERM
        stop_groups([*extra, process], timeout=60)


def _worker_host(folder: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`harness up --only worker` in `folder`, once its worker consumes (its `ready` line)."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "up", "--only", "worker"],
            cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        if b" ready" in log.read_bytes():
            return process
        time.sleep(0.5)
    stop_groups([process], timeout=60)
    tail = log.read_text(errors="replace")[-3000:]
    raise RuntimeError(f"the extra worker host did not start:\n{tail}")


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
