"""Benchmark of recovery: how long a run waits after its worker dies (SIGKILL) or is told to
stop (SIGTERM) before another worker resumes it.

Two workers and a scheduler run as subprocesses on a real Redis. Each round publishes a run of
slow steps, waits for its first step, then signals the worker executing it and times the gap
until a step starts on the other worker; a fresh worker replaces the one signalled. Floors
measured in the same run: publish -> first step on an idle fleet (what a new message waits
anyway), and for SIGKILL the design bound, the lease time plus one reaper pass (a dead worker
cannot say it is gone; its lease must lapse).

Usage: python -m bench.recovery [--rounds 3] [--lease 10] [--reaper 1] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import redis

from harness.fleet.embedded_redis import EmbeddedRedis
from harness.runtime import Runtime, publish
from harness.runtime.celery_app import CeleryKicker, configure
from harness.runtime.keys import Keys
from tests.processes import stop_groups

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "benchrec"


def _wait(check: object, what: str, timeout: float = 60.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()  # type: ignore[operator]
        if value:
            return value
        time.sleep(0.01)
    raise RuntimeError(f"timed out waiting for {what}")


class Fleet:
    """Worker and scheduler subprocesses on one Redis; workers can be signalled and replaced."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env, self.log_dir = env, log_dir
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        name = f"{args[0]}-{uuid.uuid4().hex[:6]}"
        with (self.log_dir / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "harness.cli", *args], cwd=ROOT, env=self.env,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.procs[proc.pid] = proc
        return proc

    def start_worker(self) -> subprocess.Popen[bytes]:
        return self.start("worker", "--functions", "bench.functions", "--concurrency", "2")

    def stop(self) -> None:
        stop_groups(self.procs.values(), timeout=20)


def _steps(client: redis.Redis, tag: str) -> list[tuple[int, int, float]]:
    """(index, pid, start time) of every step execution of the run tagged `tag`."""
    rows = client.lrange(f"bench:recovery:{tag}", 0, -1)
    return [(int(i), int(p), float(t)) for i, p, t in (row.split() for row in rows)]


def _live_workers(client: redis.Redis) -> int:
    infos = client.hvals(Keys(PREFIX).presence_info)
    return sum(json.loads(info).get("role") == "worker" for info in infos)


def measure(url: str, args: argparse.Namespace, log_dir: Path) -> dict[str, list[float]]:
    """Seconds from the signal to the next step on another worker, per signal; and the floor."""
    env = dict(
        os.environ, REDIS_URL=url, HARNESS_KEY_PREFIX=PREFIX, LOG_LEVEL="WARNING",
        HARNESS_LEASE_TTL=str(args.lease), HARNESS_REAPER_INTERVAL=str(args.reaper),
        HARNESS_RETRY_BACKOFF="0.1", AGENT_WORKSPACE=str(log_dir / "workspace"),
    )  # fmt: skip
    client = redis.Redis.from_url(url, decode_responses=True)
    configure(url)
    rt = Runtime(redis=client, kicker=CeleryKicker(), keys=Keys(PREFIX))
    fleet = Fleet(env, log_dir)
    out: dict[str, list[float]] = {"floor": [], "SIGKILL": [], "SIGTERM": []}
    try:
        fleet.start_worker()
        fleet.start_worker()
        fleet.start("scheduler")
        _wait(lambda: _live_workers(client) >= 2, "two workers")
        for _ in range(args.rounds + 1):  # the first warms the path up
            tag = uuid.uuid4().hex
            t0 = time.time()
            publish({"name": "bench/recovery", "data": {"tag": tag, "steps": 1, "seconds": 0}},
                    runtime=rt)  # fmt: skip
            first = _wait(lambda tag=tag: _steps(client, tag), "a first step")
            out["floor"].append(first[0][2] - t0)  # type: ignore[index]
        del out["floor"][0]
        for name, sig in (("SIGTERM", signal.SIGTERM), ("SIGKILL", signal.SIGKILL)):
            for _ in range(args.rounds):
                out[name].append(_one_recovery(client, rt, fleet, sig))
    finally:
        fleet.stop()
    return out


def _one_recovery(client: redis.Redis, rt: Runtime, fleet: Fleet, sig: signal.Signals) -> float:
    tag = uuid.uuid4().hex
    data = {"tag": tag, "steps": 4, "seconds": 1.0}
    publish({"name": "bench/recovery", "data": data}, runtime=rt)
    first = _wait(lambda: _steps(client, tag), "the run to start")
    pid = first[0][1]  # type: ignore[index]
    signalled = time.time()
    os.kill(pid, sig)
    resumed = _wait(
        lambda: [s for s in _steps(client, tag) if s[1] != pid], "another worker", timeout=120
    )
    gap = resumed[0][2] - signalled  # type: ignore[index]
    fleet.procs[pid].wait(timeout=60)
    fleet.start_worker()
    _wait(lambda: _live_workers(client) >= 2, "the replacement worker")
    _wait(lambda: len(_steps(client, tag)) >= 4 or None, "the run to finish", timeout=120)
    return gap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lease", type=float, default=10.0, help="HARNESS_LEASE_TTL, s")
    parser.add_argument("--reaper", type=float, default=1.0, help="HARNESS_REAPER_INTERVAL, s")
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with EmbeddedRedis(Path(tmp) / "redis", persist=False) as server:
            out = measure(server.url, args, Path(tmp))
    floor = statistics.median(out["floor"])
    bound = args.lease + args.reaper
    print(f"{args.rounds} rounds per signal; lease {args.lease:g} s, reaper {args.reaper:g} s")
    print(f"{'measure':44} {'median s':>9} {'max s':>7}")
    rows = [
        ("publish -> first step, idle fleet (floor)", out["floor"]),
        ("SIGTERM -> resumed on another worker", out["SIGTERM"]),
        ("SIGKILL -> resumed on another worker", out["SIGKILL"]),
    ]
    for label, values in rows:
        print(f"{label:44} {statistics.median(values):9.3f} {max(values):7.3f}")
    print(f"SIGTERM recovery / floor, median: {statistics.median(out['SIGTERM']) / floor:.1f}x")
    sigkill = statistics.median(out["SIGKILL"])
    print(f"SIGKILL recovery / (lease + reaper pass), median: {sigkill / bound:.2f}")
    if args.json:
        args.json.write_text(json.dumps({**out, "lease_s": args.lease, "reaper_s": args.reaper}))


if __name__ == "__main__":
    main()
