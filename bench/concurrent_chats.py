"""N chats that each send one message at the same moment to a running fleet, by one of two
real paths, and when each was answered.

- `telegram` (the default of `bench.concurrency`): each chat is a private Telegram chat of its
  own posting one update to `POST /webhooks/telegram`; its answer is the first `sendMessage`
  the fake Bot API (`tests/fakes/telegram_api.py`) receives for that chat. The webhook only
  publishes and returns, so nothing but the fleet's own work lies between a message and its
  answer, whatever the count.
- `api`: `POST /api/chat`, one SSE stream per chat, its answer the `reply` event. Each stream
  holds a thread and Redis connections of the web process while it waits, so this path also
  measures the web process's limits on open streams.

All sends start together from one asyncio loop (httpx2).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

import httpx2

from bench.fleet_up import RunningFleet
from tests.channels.payloads import tg_private_text
from tests.fakes.telegram_api import FakeTelegramApi

TELEGRAM_SECRET = "bench-conc-secret"
POLL_S = 0.05


@dataclass(frozen=True)
class ChatOutcome:
    """One chat: seconds from its send to its answer, or None and why not (`http 503`, `error
    unavailable` from the SSE stream, an httpx2 exception's name, `no reply` by the deadline);
    `at` is when it was answered, on the wave's own clock."""

    latency: float | None
    failure: str = ""
    at: float = 0.0


@dataclass(frozen=True)
class Wave:
    """What a wave of chats gave: seconds from the first send to the last answer (NaN when
    none was answered) and each chat's outcome, in send order."""

    last_answer_s: float
    outcomes: list[ChatOutcome]


def telegram_env(telegram: FakeTelegramApi) -> dict[str, str]:
    """The settings that point a fleet's Telegram channel at `telegram`, by webhook, serving
    every private chat (a stranger would be sent a pairing code instead of an answer)."""
    return {
        "TELEGRAM_BOT_TOKEN": telegram.token,
        "TELEGRAM_WEBHOOK_SECRET": TELEGRAM_SECRET,
        "TELEGRAM_API_BASE_URL": telegram.base_url,
        "TELEGRAM_MODE": "webhook",
        "DM_POLICY": "open",
    }


def _client(count: int, per_chat_s: float) -> httpx2.AsyncClient:
    limits = httpx2.Limits(max_connections=count + 1, max_keepalive_connections=count + 1)
    return httpx2.AsyncClient(limits=limits, timeout=httpx2.Timeout(per_chat_s))


async def telegram_wave(
    fleet: RunningFleet, telegram: FakeTelegramApi, chats: range, per_chat_s: float
) -> Wave:
    """One update from each chat id of `chats` (new ids: a chat's first `sendMessage` is its
    answer), all posted together; waits up to `per_chat_s` for the answers."""
    sent: dict[int, float] = {}
    headers = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}

    async def post(client: httpx2.AsyncClient, chat: int) -> str:
        update = tg_private_text(update_id=chat, text=f"chat {chat}: say ok")
        update["message"]["chat"]["id"] = update["message"]["from"]["id"] = chat
        sent[chat] = time.time()  # the fake notes its messages' times with time.time() too
        try:
            response = await client.post(
                f"{fleet.url}/webhooks/telegram", json=update, headers=headers
            )
        except httpx2.HTTPError as exc:
            return type(exc).__name__
        return "" if response.status_code == 200 else f"http {response.status_code}"

    async with _client(len(chats), per_chat_s) as client:
        first = time.time()
        replies = await asyncio.gather(*(post(client, c) for c in chats))
        refused = dict(zip(chats, replies, strict=True))
    waiting = {c for c in chats if not refused[c]}
    deadline = time.monotonic() + per_chat_s
    answered: dict[int, float] = {}
    while waiting - answered.keys() and time.monotonic() < deadline:
        await asyncio.sleep(POLL_S)
        answered = _first_answers(telegram, waiting)
    outcomes = [
        ChatOutcome(answered[c] - sent[c], at=answered[c]) if c in answered
        else ChatOutcome(None, refused[c] or "no reply")
        for c in chats
    ]  # fmt: skip
    last = max(answered.values(), default=float("nan")) - first
    return Wave(last, outcomes)


def _first_answers(telegram: FakeTelegramApi, chats: set[int]) -> dict[int, float]:
    """When each of `chats` was first sent a message."""
    found: dict[int, float] = {}
    for message, at in zip(telegram.messages, telegram.message_times, strict=False):
        chat = message["chat"]["id"]
        if chat in chats and chat not in found:
            found[chat] = at
    return found


async def api_wave(fleet: RunningFleet, count: int, per_chat_s: float) -> Wave:
    """`count` chats through `POST /api/chat`, each a new session, all sent together."""
    async with _client(count, per_chat_s) as client:
        first = time.perf_counter()
        outcomes = await asyncio.gather(
            *(_api_chat(client, fleet, f"chat {i}: say ok") for i in range(count))
        )
    last = max((o.at for o in outcomes if o.latency is not None), default=float("nan"))
    return Wave(last - first, list(outcomes))


async def _api_chat(client: httpx2.AsyncClient, fleet: RunningFleet, text: str) -> ChatOutcome:
    started = time.perf_counter()
    headers = {"Authorization": f"Bearer {fleet.api_key}"}
    try:
        async with client.stream(
            "POST", f"{fleet.url}/api/chat", json={"message": text}, headers=headers
        ) as response:
            if response.status_code != 200:
                return ChatOutcome(None, f"http {response.status_code}")
            event = ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                    if event == "reply":
                        now = time.perf_counter()
                        return ChatOutcome(now - started, at=now)
                elif event == "error" and line.startswith("data: "):
                    return ChatOutcome(None, f"error {json.loads(line[6:]).get('error')}")
    except httpx2.HTTPError as exc:
        return ChatOutcome(None, type(exc).__name__)
    return ChatOutcome(None, "no reply")
