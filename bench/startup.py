"""Benchmark of start-up: how long `harness` commands take to answer, against the floor of the
interpreter (`python -c pass`) and of a bare `import celery`, in the same run.

Each command runs `--rounds` times in a fresh interpreter (`python -m harness ...`, what the
`harness` executable runs), the commands interleaved round by round so that the machine's
load falls on all of them alike; the median and the slowest are reported, with the ratio of
the median to each floor. Commands that need Redis get a port nothing listens on: they fail
the way a person with no fleet up sees them fail. Each runs in an empty folder (no `.env`).

With `--fleet`, also `harness up` with its embedded Redis, `--fleet-rounds` times: seconds
from start until `/readyz` answers 200, and the resident memory (RSS) of the worker process
then, before any turn.

With `--only "agents"` (repeatable), only those commands are timed, beside the floors.

Usage: python -m bench.startup [--rounds 10] [--only ARGS]... [--fleet] [--fleet-rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.stats import process_tree

ROOT = Path(__file__).resolve().parent.parent
DEAD_REDIS = "redis://127.0.0.1:9/0"  # the discard port: nothing listens there
FLOORS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import celery'": [sys.executable, "-c", "import celery"],
    "python -c 'import celery.app'": [sys.executable, "-c", "import celery.app"],
}
COMMANDS = [
    ["--help"],
    ["--version"],
    ["runs", "--help"],
    ["functions", "--help"],
    ["doctor", "--help"],
    ["pair", "--help"],
    ["runs", "--json"],
    ["functions"],
    ["pair", "list"],
    ["usage"],
    ["budget", "show"],
    ["memory", "history"],
    ["knowledge", "list"],
    ["agents"],
    ["networks"],
    ["mcp", "list"],
    ["status"],
    ["health"],
    ["doctor", "--offline"],
]
"""Commands that call no model: each must answer within 0.5 s (issue 33)."""


def _env(workspace: Path) -> dict[str, str]:
    """This environment, with our code first on the path, no Redis and an empty workspace."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {
        **os.environ,
        "PYTHONPATH": path,
        "REDIS_URL": DEAD_REDIS,
        "AGENT_WORKSPACE": str(workspace),
        "COLUMNS": "100",
    }


def time_once(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Seconds from start to exit of `argv` (its output discarded, its exit code ignored)."""
    started = time.perf_counter()
    subprocess.run(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return time.perf_counter() - started


def measure_commands(
    rounds: int, commands: list[list[str]] | None = None
) -> dict[str, list[float]]:
    """Timings of every floor and command (`commands`, default `COMMANDS`), `rounds` each,
    interleaved."""
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        folder = Path(tmp)
        env = _env(folder / "workspace")
        runs = dict(FLOORS)
        for args in COMMANDS if commands is None else commands:
            runs[f"harness {' '.join(args)}"] = [sys.executable, "-m", "harness", *args]
        timings: dict[str, list[float]] = {name: [] for name in runs}
        for argv in runs.values():  # one unmeasured run each: the file cache warm
            time_once(argv, folder, env)
        for _ in range(rounds):
            for name, argv in runs.items():
                timings[name].append(time_once(argv, folder, env))
    return timings


def report_commands(timings: dict[str, list[float]]) -> None:
    """A Markdown table: median and slowest in ms, and the median over each floor's."""
    bare = statistics.median(timings["python -c pass"])
    celery = statistics.median(timings["python -c 'import celery'"])
    print("| command | median ms | slowest ms | / python -c pass | / import celery |")
    print("|---|---|---|---|---|")
    for name, values in timings.items():
        median = statistics.median(values)
        print(
            f"| `{name}` | {median * 1000:.0f} | {max(values) * 1000:.0f} "
            f"| {median / bare:.1f}x | {median / celery:.1f}x |"
        )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def _worker_rss_mb(root: int) -> float | None:
    """The RSS of the `harness worker` process under `root` (the largest, if several)."""
    sizes = []
    for pid in process_tree(root):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if b"worker" in command:
            rss = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
            sizes.append(int(rss.split()[1]) / 1024)
    return max(sizes) if sizes else None


def measure_up(timeout: float = 90.0) -> tuple[float, float | None]:
    """Seconds from `harness up` (embedded Redis, no model key) to `/readyz` answering 200, and
    the worker's RSS in MB then. Stops the fleet with Ctrl-C (SIGINT) before returning."""
    with tempfile.TemporaryDirectory(prefix="bench-up-") as tmp:
        folder = Path(tmp)
        port = _free_port()
        env = _env(folder / "workspace") | {"PORT": str(port)}
        del env["REDIS_URL"]  # unset: `harness up` embeds its own
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "harness", "up"],
            cwd=folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            while not _ready(port):
                if process.poll() is not None or time.perf_counter() - started > timeout:
                    raise RuntimeError("harness up did not become ready")
                time.sleep(0.05)
            ready = time.perf_counter() - started
            return ready, _worker_rss_mb(process.pid)
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def main() -> None:
    """Run the benchmark and print its tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument(
        "--only", action="append", help="time only this command (its arguments, quoted)"
    )
    parser.add_argument("--fleet", action="store_true", help="also time `harness up`")
    parser.add_argument("--fleet-rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.rounds} rounds, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n")
    only = [shlex.split(command) for command in args.only] if args.only else None
    report_commands(measure_commands(args.rounds, only))
    if args.fleet:
        print("\n| `harness up` round | ready after s | worker RSS MB |")
        print("|---|---|---|")
        for index in range(args.fleet_rounds):
            ready, rss = measure_up()
            shown = f"{rss:.0f}" if rss is not None else "?"
            print(f"| {index + 1} | {ready:.1f} | {shown} |")


if __name__ == "__main__":
    main()
