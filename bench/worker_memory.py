"""Benchmark of a worker's memory over many turns: the resident memory (RSS) of the `harness
worker` process of a fleet after 0, 100, 200, ... turns with the scripted model.

`harness up` in a fresh folder with default settings (`bench.fleet_up`), the Telegram channel
pointed at the fake Bot API; each turn is a message from a new private chat (a new session,
as a fleet serving many people sees them), sent `--wave` at a time by webhook, the model
answering "ok" at once. After one warm-up turn and after each `--step` turns, the worker's
RSS (the largest `harness.cli worker` process) and the whole fleet's are read from `/proc`.
Issue 33 asks for a worker under 160 MB after 400 turns.

Usage: python -m bench.worker_memory [--turns 400] [--step 100] [--wave 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from pathlib import Path

from bench.concurrent_chats import telegram_env, telegram_wave
from bench.fleet_up import fleet_rss_by_process, harness_up
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi

FIRST_CHAT = 7_000_000
PER_WAVE_S = 120.0


def worker_rss_mb(by_process: dict[str, float]) -> float:
    """The largest RSS among the fleet's `worker` processes (0 when none is found)."""
    return max((mb for name, mb in by_process.items() if name.endswith(" worker")), default=0.0)


def measure(turns: int, step: int, wave: int) -> list[tuple[int, float, float, int]]:
    """Rows of (turns done, worker RSS MB, fleet RSS MB, turns unanswered so far)."""
    rows: list[tuple[int, float, float, int]] = []
    with (
        ModelServer() as model,
        FakeTelegramApi() as telegram,
        tempfile.TemporaryDirectory(prefix="bench-worker-memory-") as tmp,
    ):
        model.respond_with(lambda api, body: Reply.answer("ok"))
        with harness_up(model, telegram_env(telegram), Path(tmp)) as fleet:
            chat, unanswered, done = FIRST_CHAT, 0, 0
            first = asyncio.run(telegram_wave(fleet, telegram, range(chat, chat + 1), PER_WAVE_S))
            if first.outcomes[0].latency is None:
                tail = fleet.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the warm-up turn was not answered:\n{tail}")
            chat += 1
            while True:
                sizes = fleet_rss_by_process(fleet.process.pid)
                rows.append((done, worker_rss_mb(sizes), sum(sizes.values()), unanswered))
                print(f"{done} turns: worker {rows[-1][1]:.0f} MB", flush=True)
                if done >= turns:
                    return rows
                target = min(turns, done + step)
                while done < target:
                    size = min(wave, target - done)
                    chats = range(chat, chat + size)
                    result = asyncio.run(telegram_wave(fleet, telegram, chats, PER_WAVE_S))
                    unanswered += sum(o.latency is None for o in result.outcomes)
                    chat, done = chat + size, done + size


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--step", type=int, default=100)
    parser.add_argument("--wave", type=int, default=20)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n")
    rows = measure(args.turns, args.step, args.wave)
    print("\n| turns | worker RSS MB | fleet RSS MB | unanswered |")
    print("|---|---|---|---|")
    for done, worker, fleet, unanswered in rows:
        print(f"| {done} | {worker:.0f} | {fleet:.0f} | {unanswered} |")


if __name__ == "__main__":
    main()
