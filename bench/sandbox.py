"""Benchmark of the bash tool's sandboxes: the cost of starting one command inside each.

Prints, in one run, the time to run `true` several ways, median and p90 over N rounds:
  * floor: `bash -c true` started directly (what the bash tool did before the sandbox);
  * bwrap: the same command through `harness.tools.sandbox.sandboxed` in bubblewrap;
  * landlock: the same through the Landlock supervisor (a Python start, rlimits, ruleset);
  * each of those with and without the per-command pids cgroup (made, joined before `exec`,
    emptied and removed), where this machine has a writable one;
  * a whole `bash` tool call through the registry in each mode (adds output pumping);
and the ratios against the floor, plus the median CPU time (user + system) of the processes
each one started, which a busy machine stretches less than wall time. A mode that cannot run
here is left out and said so. The measures are interleaved round by round, so machine noise
hits them alike.
Usage: python -m bench.sandbox [--rounds 200] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.stats import percentile
from harness.tools import ShellPolicy, ToolContext, default_registry
from harness.tools.pid_limit import process_bound
from harness.tools.sandbox import (
    SandboxSetting,
    bwrap_binary,
    landlock_abi,
    sandbox_mode,
    sandboxed,
    unavailable_reason,
)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(action: Callable[[], object]) -> tuple[float, float]:
    """Wall seconds and the CPU seconds of the (reaped) child processes of one `action`."""
    cpu = _children_cpu()
    started = time.perf_counter()
    action()
    return time.perf_counter() - started, _children_cpu() - cpu


def _direct(workspace: Path, policy: ShellPolicy) -> Callable[[], None]:
    def action() -> None:
        command = sandboxed("true", workspace, policy, cpu_seconds=60)
        try:
            subprocess.run(
                command.argv,
                cwd=command.cwd,
                env=command.env,
                preexec_fn=command.preexec_fn,
                check=True,
            )
        finally:
            command.release()

    return action


def _tool(workspace: Path, policy: ShellPolicy) -> Callable[[], None]:
    registry = default_registry(allow_shell=True, shell_policy=policy)
    ctx = ToolContext(workspace, allow_shell=True)

    def action() -> None:
        outcome = registry.execute("bash", {"command": "true"}, ctx)
        assert not outcome.is_error, outcome.content

    return action


def main() -> None:
    """Run the benchmark and print a table; exit 1 if no sandbox can run here."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--json", type=Path, help="also write every timing (s) here")
    args = parser.parse_args()
    rounds = args.rounds
    modes: list[SandboxSetting] = []
    for mode in ("bwrap", "landlock"):
        if sandbox_mode(mode) == mode:
            modes.append(mode)
        else:
            print(f"{mode}: left out, {unavailable_reason(ShellPolicy(mode))}")
    if not modes:
        sys.exit("no sandbox can run here")
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        actions: dict[str, Callable[[], None]] = {}
        labels = {"floor": "bash -c true (floor)"}

        def floor() -> None:
            subprocess.run(["bash", "-c", "true"], cwd=workspace, check=True)

        actions["floor"] = floor
        cgroup = process_bound().base is not None
        if not cgroup:
            print(f"pids cgroup: left out, {process_bound().reason}")
        for mode in modes:
            policy = ShellPolicy(mode, max_processes=None)
            actions[mode] = _direct(workspace, policy)
            labels[mode] = f"{mode} ... bash -c true"
            if cgroup:
                actions[f"{mode}-cgroup"] = _direct(workspace, ShellPolicy(mode))
                labels[f"{mode}-cgroup"] = f"{mode} ... + pids cgroup"
            actions[f"{mode}-tool"] = _tool(workspace, ShellPolicy(mode))
            labels[f"{mode}-tool"] = f"bash tool call, {mode}" + (" + cgroup" if cgroup else "")
        timings: dict[str, list[float]] = {name: [] for name in actions}
        cpu: dict[str, list[float]] = {name: [] for name in actions}
        for action in actions.values():  # warm caches (and the probes) first
            action()
        for _ in range(rounds):
            for name, action in actions.items():
                wall, used = _timed(action)
                timings[name].append(wall)
                cpu[name].append(used)

    base = statistics.median(timings["floor"])
    print(f"bwrap: {bwrap_binary()}; Landlock ABI {landlock_abi()}; {rounds} rounds")
    print(f"{'measure':<34}{'median ms':>10}{'p90 ms':>10}{'/ floor':>10}{'CPU ms':>10}")
    for name, label in labels.items():
        median = statistics.median(timings[name])
        p90 = percentile(timings[name], 0.9)
        used = statistics.median(cpu[name]) * 1000
        print(
            f"{label:<34}{median * 1000:>10.2f}{p90 * 1000:>10.2f}{median / base:>9.2f}x"
            f"{used:>10.1f}"
        )
    if args.json:
        args.json.write_text(json.dumps(timings))


if __name__ == "__main__":
    main()
