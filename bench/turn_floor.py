"""The floor a turn costs in the parts a fleet must use, each measured alone with no Harness
code, against what Harness spends per turn, and the bound on answering N chats it implies.

- **Parts** (the project requires them): a webhook on FastAPI and uvicorn pushing the update
  to Redis (`bench.floor_apps.webhook`), under a concurrent load from a client in another
  process; a Celery task round on the Redis broker, an empty task executed by a worker with
  `-P threads` and Harness's Celery settings (`bench.floor_apps.tasks`); one streamed model
  call through the official Anthropic SDK's async client, `--concurrency` at once on one loop
  (a 3 s model holds a connection per chat); one Bot API `sendMessage` through httpx2 (the
  SDKs' httpx) on kept-alive connections, `--send-at-once` at once on one loop (httpx2's pool
  scans every connection it holds on each request, so a call costs more the more it holds:
  a pool of 20 carries 200 calls a second of a Bot API answering in 0.1 s); and the Redis
  server's CPU for the webhook's command and for the Celery messages of a task round. Redis
  is `redis-server` with the append-only file on, as `harness up` runs it.
- **Measured:** each server process's CPU (the web process, the Celery worker, Redis) from
  `/proc/<pid>/task/*/schedstat` (nanoseconds, every thread) before and after the batch,
  divided by the batch; this process's CPU (`time.process_time`) for the callers (the model
  calls, the `sendMessage` calls, the Celery sender's `send_task`). The fakes (the scripted
  model server and the fake Bot API) and the webhook's client run in other processes, so
  their CPU is excluded. Each batch follows a warm-up.
- **A minimal turn:** 1 webhook, `TASKS_PER_TURN` task rounds, 1 model call, 1 `sendMessage`
  and Redis's share of those.
- **Harness today:** `python -m bench.concurrency --sizes 200 --delay 0.01` in the same run,
  its `cpu_ms_per_turn_by_process`.
- **Bound:** N chats at once cannot all be answered sooner than max(the model's time,
  N x CPU per turn / cores): perfect parallelism assumed, the CPU of every turn overlapping
  the model's wait and spread over every core.

Usage: python -m bench.turn_floor [--requests 2000] [--tasks 2000] [--calls 1000]
       [--concurrency 200] [--send-at-once 20] [--model-s 3] [--chats 200] [--no-harness]
       [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.floor_parts import (
    celery_round,
    model_calls,
    running_fakes,
    send_messages,
    webhook_requests,
)
from harness.fleet.embedded_redis import EmbeddedRedis

TASKS_PER_TURN = 3
"""Celery task rounds a Harness turn with an offloaded model call takes: its execution up to
the call, its resumption after it, and `send-reply`'s delivery of the answer."""
AIMS = ((200, 1.5), (1000, 2.0))
"""Issue 33's aims: chats at once, and the multiple of the model's time to answer them all."""


@dataclass(frozen=True)
class Part:
    """One part's CPU: `ms` per `unit`, measured over `units`; `per_turn` units a turn."""

    name: str
    process: str
    unit: str
    ms: float
    units: int
    per_turn: int


def measure_parts(
    requests: int, tasks: int, calls: int, concurrency: int, send_at_once: int
) -> list[Part]:
    """Every part, measured alone in this order on one fresh Redis (see the module); the
    webhook's requests and the model calls `concurrency` at once, the `sendMessage` calls
    `send_at_once`."""
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        with EmbeddedRedis(Path(tmp) / "redis", persist=True) as redis_server:
            web = webhook_requests(redis_server, requests, concurrency)
            celery = celery_round(redis_server, tasks)
    with running_fakes() as fakes:
        model = model_calls(fakes, calls, concurrency)
        send = send_messages(fakes, calls, send_at_once)
    return [
        Part("webhook", "web (uvicorn + FastAPI)", "request", web.server_ms, requests, 1),
        Part("redis for the webhook", "redis-server", "request", web.redis_ms, requests, 1),
        Part("task round: worker", "celery worker -P threads", "task", celery.worker_ms,
             tasks, TASKS_PER_TURN),
        Part("task round: sender", "the sender (send_task)", "task", celery.sender_ms, tasks,
             TASKS_PER_TURN),
        Part("redis for the task round", "redis-server", "task", celery.redis_ms, tasks,
             TASKS_PER_TURN),
        Part("model call", "the caller (AsyncAnthropic, streamed)", "call", model, calls, 1),
        Part("sendMessage", "the caller (httpx2.AsyncClient)", "call", send, calls, 1),
    ]  # fmt: skip


def harness_per_turn(chats: int) -> dict[str, Any]:
    """`bench.concurrency`'s CPU per turn, total and by process, for `chats` at once with a
    0.01 s model, run now in a subprocess."""
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        out = Path(tmp) / "concurrency.json"
        command = [sys.executable, "-m", "bench.concurrency", "--sizes", str(chats)]
        subprocess.run([*command, "--delay", "0.01", "--json", str(out)], check=True)
        [size] = json.loads(out.read_text())["sizes"]
    return {
        "chats": chats,
        "cpu_ms_per_turn": size["cpu_ms_per_turn"],
        "cpu_ms_per_turn_by_process": size["cpu_ms_per_turn_by_process"],
        "last_answer_s": size["last_answer_s"],
    }


def bound_s(chats: int, cpu_ms_per_turn: float, cores: int, model_s: float) -> float:
    """The least time `chats` turns at once can take: max(the model's time, their CPU spread
    over `cores` with perfect parallelism)."""
    return max(model_s, chats * cpu_ms_per_turn / 1000 / cores)


def bounds(
    floor_ms: float, harness: dict[str, Any] | None, cores: int, model_s: float
) -> list[dict[str, Any]]:
    """For each of `AIMS`: the CPU a turn may cost to meet it, and the bound from the floor and
    from Harness's CPU per turn (`harness_per_turn`'s figures; None without them), as seconds
    and multiples of the model's time. For Harness also the bound with its one worker
    process, whose threads share one interpreter lock: its CPU cannot spread over cores."""
    found = []
    for chats, aim in AIMS:
        floor = bound_s(chats, floor_ms, cores, model_s)
        row: dict[str, Any] = {
            "chats": chats,
            "aim_ratio": aim,
            "budget_ms_per_turn": round(aim * model_s * cores * 1000 / chats, 1),
            "floor_bound_s": round(floor, 2),
            "floor_ratio": round(floor / model_s, 2),
            "harness_bound_s": None,
            "harness_ratio": None,
            "harness_one_worker_bound_s": None,
            "harness_one_worker_ratio": None,
        }
        if harness is not None:
            spread = bound_s(chats, harness["cpu_ms_per_turn"], cores, model_s)
            worker = sum(
                ms for name, ms in harness["cpu_ms_per_turn_by_process"].items() if "worker" in name
            )
            one_worker = max(spread, bound_s(chats, worker, 1, model_s))
            row["harness_bound_s"] = round(spread, 2)
            row["harness_ratio"] = round(spread / model_s, 2)
            row["harness_one_worker_bound_s"] = round(one_worker, 2)
            row["harness_one_worker_ratio"] = round(one_worker / model_s, 2)
        found.append(row)
    return found


def report(figures: dict[str, Any]) -> str:
    """The Markdown tables of `figures` (as `main` writes them)."""
    lines = ["| part | process | ms of CPU per unit | units a turn | ms a turn |",
             "|---|---|---|---|---|"]  # fmt: skip
    for part in figures["parts"]:
        lines.append(
            f"| {part['name']} | {part['process']} | {part['ms']:.3f} per {part['unit']} "
            f"| {part['per_turn']} | {part['ms'] * part['per_turn']:.2f} |"
        )
    lines.append(f"| **the floor of a turn** | | | | **{figures['floor_ms_per_turn']:.2f}** |")
    harness = figures["harness"]
    if harness:
        by_process = ", ".join(
            f"{name.split(' ', 1)[-1]} {ms}"  # the name without its pid
            for name, ms in harness["cpu_ms_per_turn_by_process"].items()
        )
        lines.append(f"| Harness today ({by_process}) | | | | {harness['cpu_ms_per_turn']:.1f} |")
    lines += [
        "",
        f"On {figures['cpus']} cores, the model answering in {figures['model_s']:g} s:",
        "| chats at once | aim | CPU a turn may cost | bound from the floor | from Harness "
        "| from Harness's one worker process |",
        "|---|---|---|---|---|---|",
    ]
    for row in figures["bounds"]:
        lines.append(
            f"| {row['chats']} | {row['aim_ratio']}x | {row['budget_ms_per_turn']:.1f} ms "
            f"| {_bound(row, 'floor')} | {_bound(row, 'harness')} "
            f"| {_bound(row, 'harness_one_worker')} |"
        )
    lines.append(f"\nload {figures['load_before']} → {figures['load_after']}")
    return "\n".join(lines)


def _bound(row: dict[str, Any], name: str) -> str:
    if row[f"{name}_bound_s"] is None:
        return "not measured"
    return f"{row[f'{name}_bound_s']:.1f} s ({row[f'{name}_ratio']:.2f}x)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="webhook requests")
    parser.add_argument("--tasks", type=int, default=2000, help="Celery task rounds")
    parser.add_argument("--calls", type=int, default=1000, help="model and sendMessage calls")
    parser.add_argument(
        "--concurrency", type=int, default=200, help="requests, model calls at once"
    )
    parser.add_argument("--send-at-once", type=int, default=20, help="sendMessage calls at once")
    parser.add_argument("--model-s", type=float, default=3.0, help="the model's time of the aim")
    parser.add_argument("--chats", type=int, default=200, help="bench.concurrency's size")
    parser.add_argument("--no-harness", action="store_true", help="skip bench.concurrency")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    parts = measure_parts(
        args.requests, args.tasks, args.calls, args.concurrency, args.send_at_once
    )
    harness = None if args.no_harness else harness_per_turn(args.chats)
    floor = sum(p.ms * p.per_turn for p in parts)
    cores = os.cpu_count() or 1
    figures = {
        "day": time.strftime("%Y-%m-%d"),
        "cpus": cores,
        "model_s": args.model_s,
        "concurrency": args.concurrency,
        "send_at_once": args.send_at_once,
        "tasks_per_turn": TASKS_PER_TURN,
        "parts": [asdict(p) for p in parts],
        "floor_ms_per_turn": round(floor, 3),
        "harness": harness,
        "bounds": bounds(floor, harness, cores, args.model_s),
        "load_before": round(load_before, 1),
        "load_after": round(os.getloadavg()[0], 1),
    }
    print(report(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
