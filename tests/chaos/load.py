"""The load driver: conversations sent to the fleet's Telegram webhook as Telegram sends them.

Telegram delivers one chat's updates one at a time and redelivers an update until it gets a
2xx; so each conversation here posts its messages in turn, retrying a 5xx or a connection
error (Redis or the web server down) until it is accepted, while conversations run
concurrently. A plan can deliver a message more than once and out of its order. What the
webhook accepted (200 with an event id, not a duplicate) is recorded per chat, in order: the
order the replies must come back in.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx2

from tests.channels.conftest import TELEGRAM_SECRET

FIRST_CHAT = 1000
RETRY_PAUSE_S = 0.2
SEND_DEADLINE_S = 900.0


def token(chat: int, n: int) -> str:
    """The text of message `n` of chat `chat`: what the scripted model echoes."""
    return f"c{chat}-m{n}"


def update(chat: int, n: int) -> dict[str, Any]:
    """A Telegram update: message `n` of a private chat with the person `chat`."""
    person = {"id": chat, "is_bot": False, "first_name": f"P{chat}"}
    return {
        "update_id": chat * 1000 + n,
        "message": {
            "message_id": n + 1,
            "from": person,
            "chat": {"id": chat, "first_name": f"P{chat}", "type": "private"},
            "date": 1_700_000_000 + n,
            "text": token(chat, n),
        },
    }


@dataclass(frozen=True)
class Plan:
    """`chats` conversations of `messages` messages each. With `redeliver`, every message is
    delivered twice and a third of them three times, and with `shuffle` half the chats send
    two neighbouring messages swapped. `pause` spaces a chat's messages (0.5 to 1.5 times it,
    at random), like a person typing, so that the load lasts."""

    chats: int
    messages: int
    redeliver: bool = False
    shuffle: bool = False
    pause: float = 0.0
    seed: int = 0

    def deliveries(self, chat: int, rng: random.Random) -> list[int]:
        """The message numbers chat `chat` posts, in the order it posts them."""
        order = list(range(self.messages))
        if self.shuffle and self.messages > 1 and rng.random() < 0.5:
            i = rng.randrange(self.messages - 1)
            order[i], order[i + 1] = order[i + 1], order[i]
        if not self.redeliver:
            return order
        posts: list[int] = []
        for n in order:
            posts += [n] * (3 if rng.random() < 1 / 3 else 2)
        # one copy of some messages comes back later, after the next one
        for i in range(len(posts) - 2):
            if posts[i] == posts[i + 1] and rng.random() < 0.3:
                posts.insert(i + 3, posts.pop(i))
        return posts


@dataclass
class Outcome:
    """What the webhook answered, per chat and in total."""

    accepted: dict[int, list[str]] = field(default_factory=dict)
    statuses: Counter[int] = field(default_factory=Counter)
    duplicates: int = 0
    ignored: list[str] = field(default_factory=list)
    unsent: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def accepted_count(self) -> int:
        return sum(len(tokens) for tokens in self.accepted.values())


async def _post_until_accepted(
    client: httpx2.AsyncClient, url: str, chat: int, n: int, outcome: Outcome, deadline: float
) -> None:
    body = update(chat, n)
    headers = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
    while time.monotonic() < deadline:
        try:
            response = await client.post(url, json=body, headers=headers)
        except httpx2.HTTPError:
            outcome.statuses[0] += 1
            await asyncio.sleep(RETRY_PAUSE_S)
            continue
        outcome.statuses[response.status_code] += 1
        if response.status_code >= 500:
            await asyncio.sleep(RETRY_PAUSE_S)
            continue
        answer = response.json() if response.status_code == 200 else {}
        if "event_id" not in answer:
            outcome.ignored.append(f"{token(chat, n)}: {response.status_code} {response.text}")
        elif answer["duplicate"]:
            outcome.duplicates += 1
        else:
            outcome.accepted.setdefault(chat, []).append(token(chat, n))
        return
    outcome.unsent.append(token(chat, n))


async def _drive(base_url: str, plan: Plan, concurrency: int, outcome: Outcome) -> None:
    rng = random.Random(plan.seed)
    schedule = {chat: plan.deliveries(chat, rng) for chat in _chats(plan)}
    gate = asyncio.Semaphore(concurrency)
    url = f"{base_url}/webhooks/telegram"
    deadline = time.monotonic() + SEND_DEADLINE_S
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    pauses = {
        chat: [plan.pause * (0.5 + rng.random()) for _ in posts] for chat, posts in schedule.items()
    }

    async def conversation(client: httpx2.AsyncClient, chat: int) -> None:
        for n, pause in zip(schedule[chat], pauses[chat], strict=True):
            async with gate:
                await _post_until_accepted(client, url, chat, n, outcome, deadline)
            if plan.pause:
                await asyncio.sleep(pause)

    started = time.monotonic()
    async with httpx2.AsyncClient(timeout=10, limits=limits) as client:
        await asyncio.gather(*(conversation(client, chat) for chat in schedule))
    outcome.seconds = time.monotonic() - started


def _chats(plan: Plan) -> list[int]:
    return list(range(FIRST_CHAT, FIRST_CHAT + plan.chats))


def send(base_url: str, plan: Plan, concurrency: int = 32) -> Outcome:
    """Post the plan's conversations to `base_url`'s Telegram webhook; blocks until every
    message was accepted (or `SEND_DEADLINE_S` passed: those are listed in `unsent`)."""
    outcome = Outcome()
    asyncio.run(_drive(base_url, plan, concurrency, outcome))
    return outcome


class Sender:
    """`send` in a background thread, so a scenario can break things meanwhile; `outcome`
    fills in as the webhook answers."""

    def __init__(self, base_url: str, plan: Plan, concurrency: int = 32) -> None:
        self.outcome = Outcome()
        self._thread = threading.Thread(
            target=lambda: asyncio.run(_drive(base_url, plan, concurrency, self.outcome)),
            name="chaos-load",
            daemon=True,
        )
        self._thread.start()

    def done(self) -> bool:
        """True once every message was posted (accepted, or given up at the deadline)."""
        return not self._thread.is_alive()

    def join(self) -> Outcome:
        """Wait for the sending to end; the outcome."""
        self._thread.join(SEND_DEADLINE_S + 30)
        return self.outcome
