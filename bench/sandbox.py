"""Benchmark of the bash tool's sandbox: the cost of starting one command inside bubblewrap.

Prints, in one run, the time to run `true` three ways, median and p90 over N rounds:
  * floor: `bash -c true` started directly (what the bash tool did before the sandbox);
  * bwrap: the same command through `harness.tools.sandbox.sandboxed` (bwrap, rlimits);
  * tool: a whole `bash` tool call through the registry, sandbox on (adds output pumping);
and the ratios against the floor. The three are interleaved round by round, so machine noise
hits them alike. Usage: python -m bench.sandbox [--rounds 200] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness.tools import ShellPolicy, ToolContext, default_registry
from harness.tools.sandbox import bwrap_binary, sandbox_mode, sandboxed


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    """Run the benchmark and print a table; exit 1 if the sandbox cannot run here."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--json", type=Path, help="also write every timing (s) here")
    args = parser.parse_args()
    rounds = args.rounds
    if sandbox_mode("bwrap") != "bwrap":
        sys.exit(f"the bwrap sandbox cannot run here (bwrap: {bwrap_binary()})")
    policy = ShellPolicy("bwrap")
    registry = default_registry(allow_shell=True, shell_policy=policy)
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        ctx = ToolContext(workspace, allow_shell=True)

        def floor() -> None:
            subprocess.run(["bash", "-c", "true"], cwd=workspace, check=True)

        def bwrap() -> None:
            command = sandboxed("true", workspace, policy, cpu_seconds=60)
            subprocess.run(
                command.argv,
                cwd=command.cwd,
                env=command.env,
                preexec_fn=command.preexec_fn,
                check=True,
            )

        def tool() -> None:
            outcome = registry.execute("bash", {"command": "true"}, ctx)
            assert not outcome.is_error, outcome.content

        timings: dict[str, list[float]] = {"floor": [], "bwrap": [], "tool": []}
        actions = {"floor": floor, "bwrap": bwrap, "tool": tool}
        for name, action in actions.items():  # warm caches (and the bwrap probe) first
            action()
            timings[name].clear()
        for _ in range(rounds):
            for name, action in actions.items():
                timings[name].append(_timed(action))

    base = statistics.median(timings["floor"])
    print(f"bwrap: {bwrap_binary()}; {rounds} rounds")
    print(f"{'measure':<34}{'median ms':>10}{'p90 ms':>10}{'/ floor':>10}")
    labels = {
        "floor": "bash -c true (floor)",
        "bwrap": "bwrap ... bash -c true",
        "tool": "bash tool call, sandboxed",
    }
    for name, label in labels.items():
        median = statistics.median(timings[name])
        p90 = _pct(timings[name], 0.9)
        print(f"{label:<34}{median * 1000:>10.2f}{p90 * 1000:>10.2f}{median / base:>9.2f}x")
    if args.json:
        args.json.write_text(json.dumps(timings))


if __name__ == "__main__":
    main()
