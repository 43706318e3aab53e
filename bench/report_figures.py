"""The report's figures: one PNG per question, each naming the machine and its floor.

Every function takes the parsed `--json` output of one benchmark, writes one PNG and returns
the Markdown (image link and table) that goes under it. Nothing here runs a benchmark.
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Any

import matplotlib

from bench.burst import cpu_per_request, fresh_ratios, round_ratios
from bench.stats import percentile

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt  # (after the backend is chosen)

plt.rcParams.update({"axes.titlesize": 10, "axes.labelsize": 9})
MS = 1000.0
TIMES = "\N{MULTIPLICATION SIGN}"


def _save(fig: Any, path: Path, machine: str) -> None:
    fig.text(0.01, 0.01, machine, fontsize=7, color="0.35")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _image(path: Path, link_base: Path, alt: str) -> str:
    return f"![{alt}]({Path(os.path.relpath(path, link_base)).as_posix()})"


def _over_wire(run: dict[str, Any]) -> str:
    """A run's workers' CPU per turn against its wire floor (`bench.wire`); "-" for a run
    recorded before the wire floor was measured."""
    wire = run.get("wire_floor")
    return f"{float(wire['turn_over_floor']):.2f}{TIMES}" if wire else "-"


def turns_per_worker(runs: list[dict[str, Any]], out: Path, base: Path, machine: str) -> str:
    """End-to-end turns per second against the number of worker processes, against the
    throughput of a Celery no-op task on the same fleet (the floor)."""
    runs = sorted(runs, key=lambda r: int(r["workers"]))
    workers = [int(r["workers"]) for r in runs]
    turns = [float(r["turns_per_s"]) for r in runs]
    floor = [float(r["floor"]["tasks_per_s"]) for r in runs]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(workers, turns, "o-", label="agent turns/s (webhook → sendMessage)")
    ax.plot(workers, floor, "s--", label="Celery no-op tasks/s (floor)")
    for w, t, f in zip(workers, turns, floor, strict=True):
        ax.annotate(
            f"{t / f:.2f}{TIMES} floor", (w, t), textcoords="offset points", xytext=(4, -12)
        )
    ax.set_xlabel("worker processes")
    ax.set_ylabel("per second")
    ax.set_xticks(workers)
    ax.set_yscale("log")
    ax.set_title("Turns per second against workers")
    ax.legend(fontsize=8)
    _save(fig, out, machine)
    rows = [
        [str(w), f"{t:.1f}", f"{f:.1f}", f"{t / f:.2f}", _over_wire(r)]
        for w, t, f, r in zip(workers, turns, floor, runs, strict=True)
    ]
    header = ["workers", "turns/s", "Celery no-op/s (floor)", "turns / floor"]
    table = _table([*header, "worker CPU per turn / wire floor"], rows)
    return f"{_image(out, base, 'turns per second against workers')}\n\n{table}"


def webhook_latency(data: dict[str, Any], out: Path, base: Path, machine: str) -> str:
    """The distribution of webhook response times at 100 concurrent requests, against a bare
    ASGI app doing one Redis write (the floor)."""
    ours = [v * MS for v in data["ours"]]
    floor = [v * MS for v in data["floor"]]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for values, label in ((ours, "POST /webhooks/telegram"), (floor, "bare ASGI + XADD (floor)")):
        ordered = sorted(values)
        ax.plot(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], label=label)
    ax.set_xscale("log")
    ax.set_xlabel("response time, ms (log)")
    ax.set_ylabel("fraction of requests")
    ratio = percentile(ours, 0.99) / percentile(floor, 0.99)
    ax.set_title(f"Webhook response time, 100 concurrent; p99 {ratio:.2f}{TIMES} floor")
    ax.legend(fontsize=8)
    _save(fig, out, machine)
    rate_ours = len(ours) / float(data["ours_s"])
    rate_floor = len(floor) / float(data["floor_s"])
    cpu_ours, cpu_floor = (cpu_per_request(data, name) * 1e6 for name in ("ours", "floor"))
    rows = [
        ["POST /webhooks/telegram", *_quantiles(ours), f"{rate_ours:.0f}", f"{cpu_ours:.0f}"],
        ["bare ASGI + one XADD (floor)", *_quantiles(floor), f"{rate_floor:.0f}",
         f"{cpu_floor:.0f}"],
        [
            "ours / floor",
            f"{statistics.median(ours) / statistics.median(floor):.2f}{TIMES}",
            f"{percentile(ours, 0.9) / percentile(floor, 0.9):.2f}{TIMES}",
            f"{percentile(ours, 0.99) / percentile(floor, 0.99):.2f}{TIMES}",
            f"{rate_ours / rate_floor:.2f}{TIMES}",
            f"{cpu_ours / cpu_floor:.2f}{TIMES}",
        ],
    ]  # fmt: skip
    header = ["", "p50 ms", "p90 ms", "p99 ms", "req/s", "server CPU µs per request"]
    table = _table(header, rows)
    return f"{_image(out, base, 'webhook latency distribution')}\n\n{table}{_new_connections(data)}"


def _new_connections(data: dict[str, Any]) -> str:
    """The bursts of new connections: webhooks against `/healthz` (absent from older runs)."""
    if "fresh_webhook_webhook" not in data:
        return ""
    rows = [
        [label, *_quantiles([v * MS for v in data[key]])]
        for label, key in (
            ("POST /webhooks/telegram, bursts of webhooks", "fresh_webhook_webhook"),
            ("GET /healthz, bursts of /healthz", "fresh_healthz_healthz"),
            ("POST /webhooks/telegram, mixed bursts", "fresh_mixed_webhook"),
            ("GET /healthz, mixed bursts", "fresh_mixed_healthz"),
        )
    ]
    separate, mixed = fresh_ratios(data)
    by_round = statistics.median(round_ratios(data, int(data.get("concurrency", 100))))
    note = (
        f"p99 webhook / `/healthz` (aim ≤ 1.25): {separate:.2f} in bursts of one kind, "
        f"{mixed:.2f} in mixed bursts, per-round median {by_round:.2f}"
    )
    table = _table(["100 new connections at once", "p50 ms", "p90 ms", "p99 ms"], rows)
    return f"\n\n{table}\n\n{note}"


def _quantiles(values: list[float]) -> list[str]:
    return [
        f"{statistics.median(values):.1f}",
        f"{percentile(values, 0.9):.1f}",
        f"{percentile(values, 0.99):.1f}",
    ]


def step_overhead(data: dict[str, Any], out: Path, base: Path, machine: str) -> str:
    """A durable step's cost against one Redis round trip, and publish → first line against
    the Celery floor (send → first line of a no-op task)."""
    labels = {
        "redis_ping": "Redis PING round trip (floor)",
        "step_replay": "step, memoized (replay)",
        "step_new": "step, new (run + record)",
        "celery_first_line": "Celery send → first line (floor)",
        "publish_first_line": "publish → first line",
    }
    medians = {key: statistics.median(data[key]) * MS for key in labels}
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.barh(list(labels.values()), [medians[k] for k in labels], color="0.55")
    ping, celery = medians["redis_ping"], medians["celery_first_line"]
    floors = {"step_replay": ping, "step_new": ping, "publish_first_line": celery}
    for i, key in enumerate(labels):
        note = f" {medians[key] / floors[key]:.2f}{TIMES} floor" if key in floors else " floor"
        ax.annotate(note, (medians[key], i), va="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("median, ms (log)")
    ax.set_title("Step overhead against a Redis PING and the Celery floor")
    _save(fig, out, machine)
    rows = []
    for key, label in labels.items():
        p99 = percentile(data[key], 0.99) * MS
        ratio = f"{medians[key] / floors[key]:.2f}{TIMES}" if key in floors else "floor"
        rows.append([label, f"{medians[key]:.3f}", f"{p99:.3f}", ratio])
    # with the append-only file on: the engine's bare runtime and the fleet's, each against the
    # HSET of a step record measured in its own loop (absent from older measurements)
    aof = {"aof_step_new": ("AOF on: step, new", "aof_hset"),
           "fleet_step_new": ("AOF on: step, new, fleet's runtime", "fleet_hset")}  # fmt: skip
    for key, (label, floor) in aof.items():
        if key in data and floor in data:
            median = statistics.median(data[key]) * MS
            ratio = f"{median / (statistics.median(data[floor]) * MS):.2f}{TIMES} HSET"
            p99 = percentile(data[key], 0.99) * MS
            rows.append([label, f"{median:.3f}", f"{p99:.3f}", ratio])
    table = _table(["measure", "median ms", "p99 ms", "/ its floor"], rows)
    return f"{_image(out, base, 'step overhead')}\n\n{table}"


def tokens_per_turn(data: dict[str, Any], out: Path, base: Path, machine: str) -> str:
    """Tokens sent per model call over a long conversation, with pruning and compaction
    against without (the floor a naive loop would pay)."""
    raw, managed = data["tokens_raw"], data["tokens_managed"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(range(1, len(raw) + 1), raw, label="no pruning, no compaction")
    ax.plot(range(1, len(managed) + 1), managed, label="pruning + compaction")
    ax.set_xlabel("model call (two per turn: tool call, then answer)")
    ax.set_ylabel("tokens sent")
    share = sum(managed) / sum(raw)
    ax.set_title(f"Tokens per call over {len(raw) // 2} turns; managed / unmanaged {share:.2f}")
    ax.legend(fontsize=8)
    _save(fig, out, machine)
    ours = statistics.median(data["iteration_harness_s"]) * MS
    model = statistics.median(data["iteration_model_s"]) * MS
    rows = [
        ["tokens sent in total", f"{sum(raw):,}", f"{sum(managed):,}",
         f"{sum(managed) / sum(raw):.3f}"],
        ["largest call", f"{max(raw):,}", f"{max(managed):,}", f"{max(managed) / max(raw):.3f}"],
        ["last call", f"{raw[-1]:,}", f"{managed[-1]:,}", f"{managed[-1] / raw[-1]:.3f}"],
    ]  # fmt: skip
    table = _table(["", "unmanaged (floor)", "managed", "managed / unmanaged"], rows)
    extra = (
        f"Time our code adds per loop iteration: median {ours:.2f} ms against the scripted "
        f"model call's {model:.2f} ms at the wire ({ours / model:.2f}{TIMES})."
    )
    return f"{_image(out, base, 'tokens per turn')}\n\n{table}\n\n{extra}"


def recovery(data: dict[str, Any], out: Path, base: Path, machine: str) -> str:
    """How long a run waits after its worker gets SIGTERM or SIGKILL, against publish → first
    step on an idle fleet and against the lease time plus one reaper pass."""
    bound = float(data["lease_s"]) + float(data["reaper_s"])
    names = ["floor", "SIGTERM", "SIGKILL"]
    labels = ["publish → first step\n(floor)", "SIGTERM →\nresumed", "SIGKILL →\nresumed"]
    medians = [statistics.median(data[n]) for n in names]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.bar(labels, medians, color="0.55")
    for i, name in enumerate(names):
        ax.plot([i] * len(data[name]), data[name], "k.", alpha=0.6)
    notes = [
        "floor",
        f"{medians[1] / medians[0]:.1f}{TIMES} floor",
        f"{medians[2] / bound:.2f} of bound",
    ]
    for i, note in enumerate(notes):
        ax.annotate(note, (i, medians[i]), textcoords="offset points", xytext=(0, 4), ha="center")
    ax.axhline(bound, linestyle="--", color="tab:red", label=f"lease + reaper pass = {bound:g} s")
    ax.set_ylabel("seconds")
    ax.set_title("Recovery after SIGTERM and SIGKILL (bars: median, dots: rounds)")
    ax.legend(fontsize=8)
    _save(fig, out, machine)
    floor, term, kill = medians
    rows = [
        ["publish → first step, idle fleet (floor)", f"{floor:.3f}",
         f"{max(data['floor']):.3f}", ""],
        ["SIGTERM → resumed on another worker", f"{term:.3f}", f"{max(data['SIGTERM']):.3f}",
         f"{term / floor:.1f}{TIMES} floor"],
        ["SIGKILL → resumed on another worker", f"{kill:.3f}", f"{max(data['SIGKILL']):.3f}",
         f"{kill / bound:.2f} of lease + reaper pass"],
    ]  # fmt: skip
    table = _table(["measure", "median s", "max s", "ratio"], rows)
    return f"{_image(out, base, 'recovery after SIGTERM and SIGKILL')}\n\n{table}"


def sidecar_table(data: dict[str, Any]) -> str:
    """The sidecar's reload time against its debounce, and loading N modules against an empty
    folder (the fresh interpreter's floor)."""
    times = data["reload_s"]
    median = statistics.median(times)
    debounce = float(data["debounce_s"])
    rows = [
        [f"file written → first event handled, median of {len(times)}", f"{median:.2f} s",
         f"{median / debounce:.2f}{TIMES} the {debounce:g} s debounce"],
        ["same, minus the debounce", f"{median - debounce:.2f} s", ""],
        [f"validate {data['modules']} modules (fresh interpreter)", f"{data['validate_s']:.2f} s",
         f"{data['validate_s'] / data['validate_empty_s']:.2f}{TIMES} floor"],
        ["validate an empty folder (floor)", f"{data['validate_empty_s']:.2f} s", ""],
    ]  # fmt: skip
    return _table(["measure", "value", "ratio"], rows)


def sandbox_table(data: dict[str, Any]) -> str:
    """Starting a command in the bash tool's sandbox against `bash -c true` started directly."""
    base = statistics.median(data["floor"])
    labels = {"floor": "bash -c true (floor)", "bwrap": "bwrap … bash -c true",
              "bwrap-tool": "bash tool call, bwrap", "landlock": "Landlock … bash -c true",
              "landlock-tool": "bash tool call, Landlock"}  # fmt: skip
    rows = [
        [label, f"{statistics.median(data[k]) * MS:.2f}", f"{percentile(data[k], 0.9) * MS:.2f}",
         f"{statistics.median(data[k]) / base:.2f}{TIMES}"]
        for k, label in labels.items()
        if k in data  # a mode that cannot run here is left out
    ]  # fmt: skip
    return _table(["measure", "median ms", "p90 ms", "/ floor"], rows)
