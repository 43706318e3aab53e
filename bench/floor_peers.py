"""The processes beside the ones `bench.turn_floor` measures, so their CPU is not counted:

- `python -m bench.floor_peers fakes`: the scripted model server (answering "ok" at once)
  and the fake Telegram Bot API (keeping connections alive, as api.telegram.org does); prints
  one JSON line with their addresses, then serves until its stdin closes.
- `python -m bench.floor_peers load URL REQUESTS CONCURRENCY WARM`: the webhook's client:
  sends WARM Telegram updates, prints "warm", waits for a line on stdin, sends REQUESTS
  more, at most CONCURRENCY at once over kept-alive connections, then prints "done FAILED"
  (the requests not answered 200).
"""

from __future__ import annotations

import asyncio
import json
import sys

import httpx2

from bench.floor_apps import SECRET
from tests.channels.payloads import tg_private_text
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi


def serve_fakes() -> None:
    """Serve both fakes until stdin closes."""
    with ModelServer() as model, FakeTelegramApi(keep_alive=True) as telegram:
        model.respond_with(lambda _api, _body: Reply.answer("ok"))
        found = {
            "model_url": model.url,
            "model_key": model.api_key,
            "telegram_url": telegram.base_url,
            "telegram_token": telegram.token,
        }
        print(json.dumps(found), flush=True)
        sys.stdin.read()


async def _load(url: str, requests: int, concurrency: int, warm: int) -> None:
    """See the module docstring: one client for both batches, so the measured one finds its
    connections open."""
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"x-telegram-bot-api-secret-token": SECRET}
    gate = asyncio.Semaphore(concurrency)
    async with httpx2.AsyncClient(limits=limits, timeout=60.0) as client:

        async def one(update_id: int) -> bool:
            async with gate:
                body = tg_private_text(update_id, "Hello there, what is on today?")
                response = await client.post(url, json=body, headers=headers)
                return response.status_code == 200

        await asyncio.gather(*(one(i) for i in range(warm)))
        print("warm", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        answered = await asyncio.gather(*(one(warm + i) for i in range(requests)))
    print(f"done {requests - sum(answered)}", flush=True)


def main() -> None:
    command, *args = sys.argv[1:]
    if command == "fakes":
        serve_fakes()
    elif command == "load":
        url, requests, concurrency, warm = args
        asyncio.run(_load(url, int(requests), int(concurrency), int(warm)))
    else:
        raise SystemExit(f"unknown command {command!r}: fakes or load")


if __name__ == "__main__":
    main()
