"""Benchmark of the sidecar on a real Redis with a real `harness sidecar` process.

Prints:
  * reload latency: a function file written (a new version each round) -> the first event
    handled by the new code, median and max over the rounds, with the debounce's share;
  * load time of N modules: the validator's fresh interpreter importing N function files
    (harness import included), and the same interpreter with no files (the floor).
Usage: python -m bench.sidecar [--rounds 10] [--modules 100] [--debounce 2] [--sandbox auto]
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
from harness.sidecar.validate import validate

ROOT = Path(__file__).resolve().parents[1]
VERSIONED = """
from harness.runtime import event, function


@function(id="bench-versioned", trigger=event("bench/versioned"))
def versioned(ctx):
    return {version}
"""
MODULE = """
from harness.runtime import cron, event, function


@function(id="bench-{i}", trigger=[event("bench/m{i}"), cron("0 9 * * *")])
def handler(ctx):
    return {i}
"""


def _result(rt: Runtime, version: int, deadline: float) -> float:
    """Publish until a run returns `version`; the monotonic time it completed."""
    pending: list[str] = []
    while time.monotonic() < deadline:
        pending += publish({"name": "bench/versioned", "data": {}}, runtime=rt).run_ids
        for run_id in list(pending):
            record = rt.ledger.run(run_id)
            if record and record.status == "completed":
                pending.remove(run_id)
                if record.result == version:
                    return time.monotonic()
        time.sleep(0.02)
    raise TimeoutError(f"version {version} never answered")


def measure_reload(url: str, rounds: int, debounce: float, sandbox: str) -> list[float]:
    """Seconds from writing version k of a file to the first event it handled."""
    prefix = f"bench{uuid.uuid4().hex[:6]}"
    workspace = Path(tempfile.mkdtemp()) / "workspace"
    folder = workspace / "functions"
    folder.mkdir(parents=True)
    env = {
        **os.environ, "REDIS_URL": url, "HARNESS_KEY_PREFIX": prefix,
        "AGENT_WORKSPACE": str(workspace), "SIDECAR_DEBOUNCE": str(debounce),
        "HARNESS_LEASE_TTL": "2", "LOG_LEVEL": "WARNING", "SIDECAR_SANDBOX": sandbox,
    }  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "sidecar"], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    configure(url)
    rt = Runtime(
        redis=redis.Redis.from_url(url, decode_responses=True), kicker=CeleryKicker(),
        keys=Keys(prefix),
    )  # fmt: skip
    try:
        (folder / "versioned.py").write_text(VERSIONED.format(version=0))
        _result(rt, 0, time.monotonic() + 60)
        times = []
        for version in range(1, rounds + 1):
            start = time.monotonic()
            (folder / "versioned.py").write_text(VERSIONED.format(version=version))
            times.append(_result(rt, version, start + 60) - start)
        return times
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def measure_load(modules: int) -> tuple[float, float, int]:
    """(seconds to validate N modules, seconds with none, functions loaded)."""
    folder = Path(tempfile.mkdtemp()) / "functions"
    folder.mkdir()
    start = time.monotonic()
    validate(folder, env=os.environ, timeout=120)
    empty = time.monotonic() - start
    for i in range(modules):
        (folder / f"m{i:03d}.py").write_text(MODULE.format(i=i))
    start = time.monotonic()
    report = validate(folder, env=os.environ, timeout=120)
    return time.monotonic() - start, empty, len(report.functions)


def main() -> None:
    """Run both measurements and print a Markdown table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--modules", type=int, default=100)
    parser.add_argument("--debounce", type=float, default=2.0)
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "off"), default="auto")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args()
    with EmbeddedRedis(Path(tempfile.mkdtemp()), persist=False) as server:
        times = measure_reload(server.url, args.rounds, args.debounce, args.sandbox)
    load, empty, count = measure_load(args.modules)
    median, rest = statistics.median(times), statistics.median(times) - args.debounce
    print("| measure | value | aim |\n|---|---|---|")
    label = f"file written → first event handled, median of {len(times)}"
    print(f"| {label} | {median:.2f} s | ≤ 2.5 s |")
    print(f"| same, max | {max(times):.2f} s | |")
    print(f"| same, minus the {args.debounce:g} s debounce, median | {rest:.2f} s | ≤ 0.5 s |")
    print(f"| validate {count} modules (fresh interpreter) | {load:.2f} s | |")
    print(f"| validate an empty folder (the interpreter's floor) | {empty:.2f} s | |")
    if args.json:
        measured = {"reload_s": times, "debounce_s": args.debounce, "validate_s": load,
                    "validate_empty_s": empty, "modules": count}  # fmt: skip
        args.json.write_text(json.dumps(measured))


if __name__ == "__main__":
    main()
