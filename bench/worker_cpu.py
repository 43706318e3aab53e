"""Where a fleet worker's CPU goes in a wave of chats: `bench.concurrency` with the probe of
`bench/probes` (its `sitecustomize`) loaded in the worker, which times the engine's and the
agent's main calls by thread CPU and each thread's CPU over a window of the wave.

Each row is a label's CPU in the window (ms), its calls, the ms a call, and the ms a turn
(the window's total over the turns it saw: the `agent-handle-message` executions over two,
as a turn with an offloaded model call runs twice, before and after the call). A call made
during an execution has " (first)" or " (replay)" after its label: whether the execution
began with steps in its run's journal (the turn resumed after its model call, a delivery
retried). The window starts `--start` s after the worker and must end before the wave's
fleet stops (it writes nothing otherwise). Thread rows
say which thread spent it: the pool's (steps, records, Celery's tracing of each kick), the
Celery consumer's (`MainThread`), the model gateway's loop, the keeper's senders.

Usage: python -m bench.worker_cpu [--chats 400] [--delay 0.01] [--start 2] [--seconds 6]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=400)
    parser.add_argument("--delay", type=float, default=0.01, help="the model's seconds")
    parser.add_argument("--start", type=float, default=2.0, help="seconds after the worker")
    parser.add_argument("--seconds", type=float, default=6.0, help="the window")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "worker_cpu.json"
        probes = [str(ROOT / "bench" / "probes"), os.environ.get("PYTHONPATH", "")]
        env = os.environ | {"PYTHONPATH": os.pathsep.join(p for p in probes if p)}
        command = [sys.executable, "-m", "bench.concurrency", "--sizes", str(args.chats)]
        command += ["--delay", str(args.delay), "--env", f"WORKER_CPU_PROBE={out}"]
        command += ["--env", f"WORKER_CPU_START={args.start}"]
        command += ["--env", f"WORKER_CPU_SECONDS={args.seconds}"]
        subprocess.run(command, cwd=ROOT, env=env, check=True)
        found = json.loads(out.read_text())
    calls = found["calls"]
    executions = [calls.get(f"an execution of agent-handle-message ({phase})", {}) for phase in (
        "first", "replay")]  # fmt: skip
    turns = sum(e.get("calls", 0) for e in executions) / 2 or 1
    print(f"window {found['seconds']} s, about {turns:.0f} turns")
    print("| label | ms | calls | ms a call | ms a turn |\n|---|---|---|---|---|")
    for label, row in sorted(calls.items(), key=lambda kv: -kv[1]["ms"]):
        each = row["ms"] / row["calls"] if row["calls"] else 0.0
        print(
            f"| {label} | {row['ms']:.0f} | {row['calls']} | {each:.2f} | {row['ms'] / turns:.2f} |"
        )
    print("| thread | ms | | | ms a turn |")
    for name, spent in sorted(found["threads_ms"].items(), key=lambda kv: -kv[1]):
        print(f"| thread {name} | {spent} | | | {spent / turns:.2f} |")


if __name__ == "__main__":
    main()
