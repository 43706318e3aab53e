"""Benchmark of many conversations at once: N chats each send one message at the same moment
to one fleet, and the model takes a fixed time to answer each.

- **Fleet:** `python -m harness.cli up` in a fresh project folder with default settings (no
  `.env`): its embedded Redis, web, worker and scheduler (and the sidecar, on by default), one
  host. Settings given with `--env NAME=VALUE` are passed to it (e.g. `--env
  MODEL_CALLS=gateway`), so one path can be measured against another. A fresh fleet per size.
- **Model:** the scripted model server (`tests/fakes/model_server.py`) in this process,
  answering every request "ok" after `--delay` seconds (3 s by default; the stall comes after
  the stream's first event, as a real model's time to write).
- **Chats** (`bench.concurrent_chats`): by default each a private Telegram chat of its own
  posting one update to the webhook, answered when the fake Bot API receives its
  `sendMessage` (Telegram settings, webhook mode and `DM_POLICY=open` are the only settings
  added); `--via api` sends through `POST /api/chat` instead, one SSE stream per chat, which
  also measures the web process's limits on open streams. All N are sent together from one
  asyncio loop; a warm-up chat is answered first, outside the figures.
- **Measured:** time from the first send to the last answer; each chat's latency (its send to
  its `reply`), p50 and p95; when the model received the wave's last request (`last_call_s`,
  from the first send: how long the fleet took to have every chat's call made); the fleet's
  RSS, summed over `harness up` and every process it started (`/proc/<pid>/status` VmRSS,
  sampled every 0.2 s), idle before the sends and at its peak; the CPU time each fleet process
  spent from the first send to the last answer (`/proc/<pid>/stat`), per turn, which a busy
  machine slows but does not inflate; the Bot API calls per turn by method, and the TCP
  connections the fake Bot API accepted per turn (it keeps connections alive, as
  api.telegram.org does); Redis's commands per turn (`INFO commandstats` before and after,
  commands run inside scripts included); and this process's own CPU per turn (the chats, the
  fake Bot API and the scripted model: `driver_cpu_ms_per_turn`), which shares the machine's
  cores with the fleet. The whole machine's cores (`/proc/stat`, every 0.05 s,
  `bench.machine_busy`): the share of them busy from the first send to the last call, and
  from the first answer (the first call plus the model's time) to the last; the busy
  core-milliseconds per turn (`machine_cpu_ms_per_turn`: fleet, driver and anything else); and
  the **CPU floor** (`cpu_floor`): the earliest the last answer could have come had that CPU
  been spread evenly over all cores. `last answer / CPU floor` says how much of the wave's
  time is not the machine's capacity but how the work was spread over it.
  **Floor:** the model's delay as the fake measured its own answers in the same run (median
  per request, from its first byte read to its last byte written).

Usage: python -m bench.concurrency [--sizes 16,64,200] [--large] [--delay 3]
       [--via telegram|api] [--env NAME=VALUE ...] [--json FILE] [--svg FILE]
(`--large` adds 1000 chats.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from redis import Redis

from bench.concurrency_plot import Guide, Series, concurrency_svg
from bench.concurrent_chats import Wave, api_wave, telegram_env, telegram_wave
from bench.fleet_up import (
    RssSampler,
    fleet_cpu_by_process,
    fleet_pss_mb,
    fleet_rss_by_process,
    harness_up,
)
from bench.machine_busy import MachineBusy
from bench.stats import percentile
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi

FIRST_CHAT = 20_000_001
"""Chat ids of a wave start here (Telegram private chat ids are positive)."""
AIM_RATIO = 1.5
AIM_RSS_MB = 600


@dataclass(frozen=True)
class SizeResult:
    """One size's figures (seconds and megabytes)."""

    chats: int
    answered: int
    failures: dict[str, int]
    last_answer_s: float
    latency_p50_s: float
    latency_p95_s: float
    floor_s: float
    ratio: float
    rss_idle_mb: float
    rss_peak_mb: float
    pss_idle_mb: float
    rss_idle_by_process: dict[str, float]
    model_requests: int
    load_before: float
    load_after: float
    cpu_ms_per_turn: float = float("nan")
    cpu_ms_per_turn_by_process: dict[str, float] = field(default_factory=dict)
    rss_peak_by_process: dict[str, float] = field(default_factory=dict)
    bot_api_calls_per_turn: dict[str, float] = field(default_factory=dict)
    bot_api_connections_per_turn: float = float("nan")
    last_call_s: float = float("nan")
    redis_commands_per_turn: dict[str, float] = field(default_factory=dict)
    driver_cpu_ms_per_turn: float = float("nan")
    busy_until_last_call: float = float("nan")
    busy_answering: float = float("nan")
    machine_cpu_ms_per_turn: float = float("nan")
    cpu_floor_s: float = float("nan")


def measure(
    count: int,
    delay: float,
    via: str,
    extra_env: dict[str, str],
    timeout: float,
    extra_workers: int = 0,
) -> SizeResult:
    """One fresh fleet (with `extra_workers` more worker hosts, see `harness_up`), one
    warm-up chat, then `count` chats at once by `via` ("telegram" or "api", see
    `bench.concurrent_chats`)."""
    load_before = os.getloadavg()[0]
    with (
        ModelServer() as model,
        FakeTelegramApi(keep_alive=True) as telegram,
        tempfile.TemporaryDirectory(prefix="bench-conc-") as tmp,
    ):
        asked: list[float] = []  # when each model request came (monotonic)

        def answer(api: str, body: object) -> Reply:
            asked.append(time.monotonic())
            return Reply.answer("ok", delay=delay)

        model.respond_with(answer)
        env = (telegram_env(telegram) if via == "telegram" else {}) | extra_env

        def wave(chats: range) -> Wave:
            if via == "telegram":
                return asyncio.run(telegram_wave(fleet, telegram, chats, timeout))
            return asyncio.run(api_wave(fleet, len(chats), timeout))

        with harness_up(model, env, Path(tmp), extra_workers) as fleet:
            if wave(range(FIRST_CHAT - 1, FIRST_CHAT)).outcomes[0].latency is None:
                tail = fleet.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the warm-up chat was not answered:\n{tail}")
            idle = fleet_rss_by_process(*fleet.pids)
            idle_pss = fleet_pss_mb(*fleet.pids)
            before = len(model.answer_seconds)
            cpu_before = fleet_cpu_by_process(*fleet.pids)
            calls_before, connections_before = len(telegram.calls), telegram.connections
            redis = Redis.from_url(fleet.redis_url())
            commands_before = _command_calls(redis)
            asked_before, sent_at = len(asked), time.monotonic()
            driver_before = time.process_time()
            with RssSampler(*fleet.pids) as rss, MachineBusy() as machine:
                result = wave(range(FIRST_CHAT, FIRST_CHAT + count))
            cpu = _cpu_ms_per_turn(cpu_before, fleet_cpu_by_process(*fleet.pids), count)
            methods = Counter(call.method for call in telegram.calls[calls_before:])
            connections = telegram.connections - connections_before
            answers = model.answer_seconds[before:]
            last_call = max(asked[asked_before:], default=float("nan")) - sent_at
            first_call = min(asked[asked_before:], default=float("nan")) - sent_at
            commands = _command_calls(redis) - commands_before
            driver = time.process_time() - driver_before
    last, outcomes = result.last_answer_s, result.outcomes
    done = [o.latency for o in outcomes if o.latency is not None]
    failures = Counter(o.failure for o in outcomes if o.latency is None)
    floor = statistics.median(answers) if answers else float("nan")
    called, answering, ended = sent_at + last_call, sent_at + first_call + floor, sent_at + last
    spent = machine.cpu_s(sent_at, ended)
    return SizeResult(
        chats=count,
        answered=len(done),
        failures=dict(failures),
        last_answer_s=round(last, 3),
        latency_p50_s=round(percentile(done, 0.5), 3) if done else float("nan"),
        latency_p95_s=round(percentile(done, 0.95), 3) if done else float("nan"),
        floor_s=round(floor, 3),
        ratio=round(last / floor, 2),
        rss_idle_mb=round(sum(idle.values()), 1),
        rss_peak_mb=round(rss.peak, 1),
        pss_idle_mb=round(idle_pss, 1),
        rss_idle_by_process={name: round(mb, 1) for name, mb in idle.items()},
        rss_peak_by_process={name: round(mb, 1) for name, mb in rss.peak_by_process.items()},
        model_requests=len(answers),
        load_before=round(load_before, 1),
        load_after=round(os.getloadavg()[0], 1),
        cpu_ms_per_turn=round(sum(cpu.values()), 1),
        cpu_ms_per_turn_by_process=cpu,
        bot_api_calls_per_turn={m: round(n / count, 2) for m, n in methods.most_common()},
        bot_api_connections_per_turn=round(connections / count, 2),
        last_call_s=round(last_call, 3),
        redis_commands_per_turn=_per_turn(commands, count),
        driver_cpu_ms_per_turn=round(driver * 1000 / count, 1),
        busy_until_last_call=round(machine.busy(sent_at, called), 2),
        busy_answering=round(machine.busy(answering, ended), 2),
        machine_cpu_ms_per_turn=round(spent * 1000 / count, 1),
        cpu_floor_s=round(cpu_floor(floor, last_call, machine.cpu_s(sent_at, called), spent), 3),
    )


def cpu_floor(model_s: float, last_call_s: float, cpu_before_s: float, cpu_s: float) -> float:
    """The earliest the wave's last answer could have come had the CPU it took (`cpu_s`
    core-seconds, the whole machine's) been spread evenly over all cores: not before all of
    it was done, and (when every call was made before the first answer could come, so the
    CPU until the last call, `cpu_before_s`, was spent on making calls) not before that CPU
    was done and the last call then took the model's time."""
    cores = os.cpu_count() or 1
    spread = cpu_s / cores
    if last_call_s < model_s:
        return max(spread, cpu_before_s / cores + model_s)
    return spread


def _command_calls(redis: Redis) -> Counter[str]:
    """How many times Redis has run each command (INFO commandstats), by command."""
    stats = redis.info("commandstats")
    return Counter({name.removeprefix("cmdstat_"): row["calls"] for name, row in stats.items()})


def _per_turn(commands: Counter[str], turns: int) -> dict[str, float]:
    """`commands` a turn, the most frequent first, with their sum under "all"."""
    rows = {name: round(n / turns, 1) for name, n in commands.most_common() if n >= turns / 10}
    return {"all": round(sum(commands.values()) / turns, 1), **rows}


def _cpu_ms_per_turn(
    before: dict[str, float], after: dict[str, float], turns: int
) -> dict[str, float]:
    """CPU milliseconds per turn of each process that ran throughout the wave (the sampler's
    own reads included, a fraction of a millisecond), the busiest first."""
    spent = {name: (after[name] - before[name]) * 1000 / turns for name in after if name in before}
    return {name: round(ms, 1) for name, ms in sorted(spent.items(), key=lambda kv: -kv[1]) if ms}


def write_svg(path: Path, results: list[SizeResult], delay: float, caption: str) -> None:
    """The figure of `results` (see `bench.concurrency_plot`) at `path`."""
    floor = statistics.median(r.floor_s for r in results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        concurrency_svg(
            [r.chats for r in results],
            [
                Series("last answer", "#c0392b", [r.last_answer_s for r in results]),
                Series("per-chat p95", "#2471a3", [r.latency_p95_s for r in results]),
            ],
            [
                Guide(f"model {delay:g} s (floor)", floor),
                Guide(f"aim {AIM_RATIO}x", floor * AIM_RATIO),
            ],
            Series("peak RSS", "#1e8449", [r.rss_peak_mb for r in results]),
            [Guide(f"aim {AIM_RSS_MB} MB", AIM_RSS_MB)],
            caption,
        )
    )


def report(results: list[SizeResult], delay: float) -> str:
    """The Markdown table of `results`."""
    lines = [
        f"| chats at once | answered | last answer | ratio to the {delay:g} s floor | p50 | p95 "
        "| RSS idle | RSS peak | PSS idle | CPU per turn | cores busy | CPU floor | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.chats} | {r.answered} | {r.last_answer_s:.1f} s | {r.ratio:.1f}x "
            f"| {r.latency_p50_s:.1f} s | {r.latency_p95_s:.1f} s | {r.rss_idle_mb:.0f} MB "
            f"| {r.rss_peak_mb:.0f} MB | {r.pss_idle_mb:.0f} MB | {r.cpu_ms_per_turn:.0f} ms "
            f"| {r.busy_until_last_call:.0%} / {r.busy_answering:.0%} "
            f"| {r.cpu_floor_s:.1f} s ({r.last_answer_s / r.cpu_floor_s:.2f}x) "
            f"| {r.load_before:.0f} → {r.load_after:.0f} |"
        )
    return "\n".join(lines)


def _env_pairs(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"--env takes NAME=VALUE, not {pair!r}")
        env[name] = value
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="16,64,200", help="comma-separated chat counts")
    parser.add_argument("--large", action="store_true", help="also 1000 chats at once")
    parser.add_argument("--delay", type=float, default=3.0, help="the model's seconds per answer")
    parser.add_argument("--via", choices=("telegram", "api"), default="telegram")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--timeout", type=float, default=900.0, help="per chat, seconds")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker hosts: `harness up` and N-1 more `harness up --only worker`",
    )
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--svg", type=Path, help="draw the figure here (e.g. docs/benchmarks/concurrency.svg)"
    )
    parser.add_argument("--redraw", type=Path, help="only draw --svg from this --json output")
    args = parser.parse_args()
    if args.redraw:
        saved = json.loads(args.redraw.read_text())
        results = [SizeResult(**size) for size in saved["sizes"]]
        _draw(args.svg, results, saved)
        return
    sizes = [int(s) for s in args.sizes.split(",") if s] + ([1000] if args.large else [])
    extra_env = _env_pairs(args.env)
    results = []
    for count in sizes:
        results.append(
            measure(count, args.delay, args.via, extra_env, args.timeout, args.workers - 1)
        )
        print(f"{count} chats: {json.dumps(asdict(results[-1]))}", flush=True)
    print(report(results, args.delay))
    day = time.strftime("%Y-%m-%d")
    out = {
        "day": day,
        "model_delay_s": args.delay,
        "via": args.via,
        "env": extra_env,
        "cpus": os.cpu_count(),
        "workers": args.workers,
        "sizes": [asdict(r) for r in results],
    }
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    if args.svg:
        _draw(args.svg, results, out)


def _draw(svg: Path, results: list[SizeResult], saved: dict[str, Any]) -> None:
    env: dict[str, str] = saved["env"]
    path = " ".join(f"{k}={v}" for k, v in env.items()) or "default settings"
    caption = (
        f"harness up, one host, {path}, chats by {saved['via']}; the model answers after "
        f"{saved['model_delay_s']:g} s; {saved['day']}"
    )
    write_svg(svg, results, saved["model_delay_s"], caption)


if __name__ == "__main__":
    main()
