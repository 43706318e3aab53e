"""The CPU a Telegram Bot API call costs the process that makes it, and whether a burst of calls
from many threads reuses connections.

- **Server:** the fake Bot API (`tests/fakes/telegram_api.py`) in this process, HTTP/1.1 with
  keep-alive like api.telegram.org; it counts the TCP connections it accepts.
- **Measured:** the real `TelegramApi` (whatever `channels` is on `PYTHONPATH`: run it on two
  trees to compare them, alternating), `--threads` threads at once each making `--calls` calls,
  alternately `sendChatAction` (the acknowledgement keeper's call) and `sendMessageDraft` with
  a short HTML text (the draft writer's): the calling threads' own CPU per call
  (`time.thread_time`, so the fake's threads are not counted), and the connections the fake
  accepted per call.
- **Floor:** the same requests' bytes posted by `http.client`, one kept-alive connection per
  thread: the least a Python thread can do per call. Measured in the same run, alternating
  with the calls, so the ratio holds on a busy machine.

Usage: python -m bench.telegram_calls [--threads 1,16,64] [--calls 50] [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from channels.telegram.api import TelegramApi
from tests.fakes.telegram_api import FakeTelegramApi

CHAT = "20000001"
DRAFT_TEXT = "<b>Hello</b>, this is the answer so far"


def _in_threads(threads: int, work: Callable[[int], None]) -> float:
    """Run `work(i)` on `threads` threads started together; their summed CPU seconds."""
    spent: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def run(index: int) -> None:
        start.wait()
        began = time.thread_time()
        work(index)
        with lock:
            spent.append(time.thread_time() - began)

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return sum(spent)


def ours(api: TelegramApi, calls: int) -> Callable[[int], None]:
    """Each thread's calls through `TelegramApi`."""

    def work(_index: int) -> None:
        for n in range(calls):
            if n % 2:
                api.send_message_draft(CHAT, 7, DRAFT_TEXT, parse_mode="HTML")
            else:
                api.send_chat_action(CHAT, "typing")

    return work


def floor(fake: FakeTelegramApi, calls: int) -> Callable[[int], None]:
    """Each thread's same requests as bytes through one kept-alive `http.client` connection."""
    origin = urlsplit(fake.base_url)
    bodies = [
        ("sendChatAction", json.dumps({"chat_id": CHAT, "action": "typing"}).encode()),
        (
            "sendMessageDraft",
            json.dumps(
                {"chat_id": CHAT, "draft_id": 7, "text": DRAFT_TEXT, "parse_mode": "HTML"}
            ).encode(),
        ),
    ]
    headers = {"Content-Type": "application/json"}

    def work(_index: int) -> None:
        connection = http.client.HTTPConnection(origin.hostname or "", origin.port)
        for n in range(calls):
            method, body = bodies[n % 2]
            connection.request("POST", f"/bot{fake.token}/{method}", body, headers)
            response = connection.getresponse()
            if not json.loads(response.read()).get("ok"):
                raise RuntimeError(f"{method} failed")
        connection.close()

    return work


def measure(threads: int, calls: int, rounds: int) -> dict[str, float]:
    """Median over `rounds` of our and the floor's CPU per call (ms), alternating, and the
    connections the fake accepted per call of ours."""
    ours_ms: list[float] = []
    floor_ms: list[float] = []
    connections: list[float] = []
    total = threads * calls
    with FakeTelegramApi(keep_alive=True) as fake:
        api = TelegramApi(fake.token, fake.base_url)
        try:
            _in_threads(threads, ours(api, 2))  # warm-up: imports, the first connections
            for _ in range(rounds):
                before = fake.connections
                ours_ms.append(1000 * _in_threads(threads, ours(api, calls)) / total)
                connections.append((fake.connections - before) / total)
                floor_ms.append(1000 * _in_threads(threads, floor(fake, calls)) / total)
        finally:
            api.close()
    ours_median, floor_median = statistics.median(ours_ms), statistics.median(floor_ms)
    return {
        "threads": threads,
        "calls_per_thread": calls,
        "cpu_ms_per_call": round(ours_median, 3),
        "floor_cpu_ms_per_call": round(floor_median, 3),
        "ratio": round(ours_median / floor_median, 2),
        "connections_per_call": round(statistics.median(connections), 3),
        "load": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", default="1,16,64", help="comma-separated thread counts")
    parser.add_argument("--calls", type=int, default=50, help="calls per thread per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    results = []
    for threads in (int(t) for t in args.threads.split(",") if t):
        results.append(measure(threads, args.calls, args.rounds))
        print(json.dumps(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
