"""Benchmark of kick storms: kicks in the Celery queue while runs wait for a busy fleet.

500 runs are published with no free worker (none is running), and the scheduler's reaper
runs every second for `--seconds`, through the real Celery kicker on a real Redis. The floor
is one kick per waiting run. Then the broker loses every kick (the queue is deleted) and the
reaper runs on while a worker starts: it must re-send each lost kick about once, and every
run must complete.

Usage: python -m bench.kicks [--runs 500] [--seconds 60]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

from harness.fleet.embedded_redis import EmbeddedRedis
from harness.runtime import Runtime, event, publish
from harness.runtime.celery_app import CeleryKicker, configure
from harness.runtime.functions import DEFAULT_QUEUE, FunctionSpec
from harness.runtime.keys import Keys
from harness.runtime.presence import live_members
from harness.runtime.scheduler import reap_once

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "benchkicks"
_SPEC = FunctionSpec(id="bench-kicks", triggers=(event("bench/kicks"),), retries=0)


def _queued(client: redis.Redis) -> int:
    return int(client.llen(DEFAULT_QUEUE))  # type: ignore[arg-type]


def measure(url: str, runs: int, seconds: int, log_dir: Path) -> dict[str, float]:
    """Kicks queued after publishing and after `seconds` of reaping; then, after the broker
    lost them all and a worker started, the kicks re-sent and the seconds from the worker's
    start until every run completed."""
    client = redis.Redis.from_url(url, decode_responses=True)
    configure(url)
    rt = Runtime(redis=client, kicker=CeleryKicker(), keys=Keys(PREFIX))
    client.hset(rt.keys.functions, "bench-kicks", _SPEC.model_dump_json())
    client.incr(rt.keys.functions_version)
    run_ids = [publish({"name": "bench/kicks", "id": f"k{i}"}, runtime=rt).run_ids[0]
               for i in range(runs)]  # fmt: skip
    out: dict[str, float] = {"queued": _queued(client)}
    for _ in range(seconds):
        time.sleep(1)
        reap_once(rt)
    out["after"] = _queued(client)
    client.delete(DEFAULT_QUEUE)
    sent_before = int(client.get(f"{PREFIX}:kick:sent:{DEFAULT_QUEUE}") or 0)
    env = dict(os.environ, REDIS_URL=url, HARNESS_KEY_PREFIX=PREFIX, LOG_LEVEL="WARNING")
    start = time.perf_counter()
    with (log_dir / "worker.log").open("wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "worker", "--functions", "bench.functions",
             "--concurrency", "4"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        while not live_members(rt, "worker") and time.perf_counter() - start < 60:
            time.sleep(0.1)
        start = time.perf_counter()
        while time.perf_counter() - start < 120:
            reap_once(rt)
            pipe = client.pipeline(transaction=False)
            for run_id in run_ids:
                pipe.hget(rt.keys.run(run_id), "status")
            if all(status == "completed" for status in pipe.execute()):
                break
            time.sleep(0.5)
        out["recovered_s"] = time.perf_counter() - start
    finally:
        worker.terminate()
        worker.wait(timeout=20)
    out["resent"] = int(client.get(f"{PREFIX}:kick:sent:{DEFAULT_QUEUE}") or 0) - sent_before
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--seconds", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp), persist=False) as server:
        out = measure(server.url, args.runs, args.seconds, Path(tmp))
    n = args.runs
    print(f"{n} runs waiting, no free worker, reaper every 1 s:")
    print(f"  kicks queued after publishing: {out['queued']:.0f}")
    print(f"  kicks queued after {args.seconds} s: {out['after']:.0f}")
    print(f"  queued / floor (one per run): {out['after'] / n:.2f}x")
    print("the broker loses every kick, then a worker starts:")
    print(f"  kicks re-sent: {out['resent']:.0f} ({out['resent'] / n:.2f}x the lost ones)")
    print(f"  seconds from the worker's start until every run completed: {out['recovered_s']:.1f}")


if __name__ == "__main__":
    main()
