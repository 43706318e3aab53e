"""The benchmark report: run the benchmarks, plot them, and write the generated section of
`docs/benchmarks.md` (between `<!-- report:begin -->` and `<!-- report:end -->`; the
hand-written sections around it are left alone) with its PNGs under `docs/benchmarks/`.

Each benchmark runs as a subprocess of its own command (`python -m bench.X ... --json FILE`),
so the report measures exactly what the command prints. A benchmark that fails is tried once
more, then reported as failed with the end of its output; the others still run. Every figure
names the machine and shows a ratio against a floor measured in the same run.

Usage: python -m bench.report [--quick] [--markdown docs/benchmarks.md]
                              [--figures docs/benchmarks] [--only runtime,agent,...]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import report_figures as figures
from harness.fleet.embedded_redis import find_redis_server

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- report:begin -->", "<!-- report:end -->"


@dataclass(frozen=True)
class Budget:
    """The arguments each benchmark gets: `FULL` for the committed report, `QUICK` to check
    that the report runs at all (its figures mean little)."""

    runtime: tuple[str, ...]
    agent: tuple[str, ...]
    webhooks: tuple[str, ...]
    worker_counts: tuple[int, ...]
    burst: tuple[str, ...]
    recovery: tuple[str, ...]
    sidecar: tuple[str, ...]
    sandbox: tuple[str, ...]
    timeout_s: float


FULL = Budget(
    runtime=("--rounds", "200", "--steps", "2000"),
    agent=("--turns", "200", "--iterations", "40", "--rounds", "5"),
    webhooks=("--requests", "300", "--clients", "8", "--serial", "20"),
    worker_counts=(1, 2, 3),
    burst=("--concurrency", "100", "--bursts", "20"),
    recovery=("--rounds", "3"),
    sidecar=("--rounds", "10", "--modules", "100"),
    sandbox=("--rounds", "200"),
    timeout_s=1200,
)
QUICK = Budget(
    runtime=("--rounds", "10", "--steps", "100"),
    agent=("--turns", "20", "--iterations", "3", "--rounds", "1"),
    webhooks=("--requests", "20", "--clients", "4", "--serial", "3"),
    worker_counts=(1, 2),
    burst=("--concurrency", "100", "--bursts", "2", "--fresh-bursts", "2"),
    recovery=("--rounds", "1", "--lease", "2", "--reaper", "0.5"),
    sidecar=("--rounds", "1", "--modules", "5", "--debounce", "0.5"),
    sandbox=("--rounds", "10"),
    timeout_s=300,
)


@dataclass(frozen=True)
class Section:
    """One row of the report: the benchmark `bench.<name>` (also its `--only` name and its
    `Budget` field), run once, or once per worker count with `per_worker_count` (its JSON is
    then the list of the runs'); `render` turns the JSON into Markdown, as a plot saved to
    `<figure>.png` (`render(data, png, link_base, machine)`) or, with no `figure`, a table
    (`render(data)`); `note` follows the command under the heading."""

    name: str
    title: str
    render: Callable[..., str]
    figure: str | None = None
    note: str = ""
    per_worker_count: bool = False


TABLE = (
    Section(
        "webhooks",
        "Turns per second against workers",
        figures.turns_per_worker,
        figure="turns_per_worker",
        note="Each worker process has 8 threads; the scripted model answers at once; the "
        "floor is a Celery no-op task sent to the same workers",
        per_worker_count=True,
    ),
    Section(
        "burst",
        "Webhook latency at 100 concurrent",
        figures.webhook_latency,
        figure="webhook_latency",
    ),
    Section("runtime", "Step overhead", figures.step_overhead, figure="step_overhead"),
    Section(
        "agent",
        "Tokens per turn over a long conversation",
        figures.tokens_per_turn,
        figure="tokens_per_turn",
    ),
    Section(
        "recovery",
        "Recovery after SIGTERM and SIGKILL",
        figures.recovery,
        figure="recovery",
        note="Two workers and a scheduler; runs of 1-second steps",
    ),
    Section("sidecar", "Sidecar reload", figures.sidecar_table),
    Section("sandbox", "Shell sandbox", figures.sandbox_table),
)
"""The report's sections, in the order they run and appear."""
SECTIONS = tuple(section.name for section in TABLE)


def machine() -> str:
    """One line naming the machine: cores, CPU model, Python, Redis."""
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    redis_version = subprocess.run(
        [find_redis_server(), "--version"], capture_output=True, text=True, check=False
    ).stdout.split()
    version = next((w[2:] for w in redis_version if w.startswith("v=")), "?")
    return (
        f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}, Redis {version}, "
        f"{platform.system()} {platform.release()}"
    )


@dataclass
class Outcome:
    """One benchmark run: its JSON, or why there is none."""

    data: Any = None
    error: str = ""


def run(module: str, args: tuple[str, ...], work: Path, timeout_s: float, tag: str = "") -> Outcome:
    """`python -m bench.<module> *args --json FILE`, tried twice: on a machine shared with
    other work a subprocess fleet can miss a benchmark's own start-up deadline once."""
    outcome = _run_once(module, args, work, timeout_s, tag)
    if outcome.error:
        print(f"  failed ({outcome.error}); once more", flush=True)
        outcome = _run_once(module, args, work, timeout_s, tag)
    return outcome


def _run_once(
    module: str, args: tuple[str, ...], work: Path, timeout_s: float, tag: str
) -> Outcome:
    """One run; its output goes to `work/<name>.log`."""
    name = f"{module}{tag}"
    result_file, log_file = work / f"{name}.json", work / f"{name}.log"
    command = [sys.executable, "-m", f"bench.{module}", *args, "--json", str(result_file)]
    print(f"running: python -m bench.{module} {' '.join(args)}", flush=True)
    with log_file.open("wb") as log:
        try:
            done = subprocess.run(
                command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=timeout_s,
                check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return Outcome(error=f"timed out after {timeout_s:g} s")
    if done.returncode != 0 or not result_file.exists():
        tail = log_file.read_text(errors="replace").strip().splitlines()[-3:]
        return Outcome(error=f"exit {done.returncode}: " + " / ".join(tail))
    return Outcome(data=json.loads(result_file.read_text()))


def _measure(section: Section, budget: Budget, work: Path) -> tuple[str, Outcome]:
    """Run `section`'s benchmark; the command to show under its heading, and the outcome (the
    first failure, when one of several runs failed)."""
    args: tuple[str, ...] = getattr(budget, section.name)
    command = f"python -m bench.{section.name} {' '.join(args)}"
    t = budget.timeout_s
    if not section.per_worker_count:
        return command, run(section.name, args, work, t)
    runs = [
        run(section.name, (*args, "--workers", str(n)), work, t, f"-{n}")
        for n in budget.worker_counts
    ]
    failed = next((r for r in runs if r.error), None)
    return f"{command} --workers N", failed or Outcome(data=[r.data for r in runs])


def _section(
    section: Section,
    command: str,
    outcome: Outcome,
    figure: Callable[[str], tuple[Path, Path, str]],
) -> str:
    """The section's Markdown: heading, command and note, then its plot or table (`figure`
    gives a plot's `render` arguments after the data), or why it was not measured."""
    head = f"### {section.title}\n\n`{command}`" + (f". {section.note}" if section.note else "")
    if outcome.error:
        return f"{head}\n\nNot measured: {outcome.error}\n"
    if section.figure is None:
        return f"{head}\n\n{section.render(outcome.data)}\n"
    return f"{head}\n\n{section.render(outcome.data, *figure(section.figure))}\n"


def build(budget: Budget, figures_dir: Path, link_base: Path, only: set[str], quick: bool) -> str:
    """Run the benchmarks in `only` and return the Markdown of the generated section."""
    figures_dir.mkdir(parents=True, exist_ok=True)
    host = machine()
    load_before = os.getloadavg()
    started = datetime.datetime.now(datetime.UTC)
    parts: list[str] = []

    def figure(name: str) -> tuple[Path, Path, str]:
        return figures_dir / f"{name}.png", link_base, host

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for section in TABLE:
            if section.name in only:
                command, outcome = _measure(section, budget, work)
                parts.append(_section(section, command, outcome, figure))
    load_after = os.getloadavg()
    minutes = (datetime.datetime.now(datetime.UTC) - started).total_seconds() / 60
    mode = " --quick" if quick else ""
    caveat = " (quick mode: tiny budgets, the figures only show that the report runs)"
    intro = (
        f"## Report (`python -m bench.report{mode}`)\n\n"
        "Generated by `bench/report.py`; do not edit by hand between the markers. Each "
        "benchmark ran as its own command (shown under its heading); every ratio is against a "
        "floor measured in the same run.\n\n"
        f"- Generated {started:%Y-%m-%d %H:%M} UTC in {minutes:.0f} min"
        f"{caveat if quick else ''}.\n"
        f"- Machine: {host}.\n"
        f"- Load average (1 min) {load_before[0]:.1f} at the start and {load_after[0]:.1f} at the "
        "end: other work shared the machine, so absolute figures are noisier than on a quiet "
        "one, which is why the ratios are what count.\n"
    )
    return "\n".join([BEGIN, intro, *parts, END])


def write_section(markdown: Path, section: str) -> None:
    """Replace the generated section of `markdown` (or append it when the markers are not
    there yet), leaving everything outside the markers as it was."""
    text = markdown.read_text() if markdown.exists() else "# Benchmarks\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    markdown.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny budgets: a smoke run")
    parser.add_argument("--markdown", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--figures", type=Path, help="PNG folder (default: beside --markdown)")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    args = parser.parse_args()
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    unknown = only - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {sorted(unknown)}; choose from {', '.join(SECTIONS)}")
    markdown = args.markdown.resolve()
    figures_dir = (args.figures or markdown.parent / "benchmarks").resolve()
    section = build(QUICK if args.quick else FULL, figures_dir, markdown.parent, only, args.quick)
    write_section(markdown, section)
    print(f"wrote the report section of {markdown} and its figures in {figures_dir}")


if __name__ == "__main__":
    main()
