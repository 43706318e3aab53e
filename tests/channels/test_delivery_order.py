"""Replies of one chat reach it in the order they were published, across a worker crash in the
middle of a delivery and the retry that follows."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from channels import registry as channel_registry
from channels.base import ChunkSent
from channels.delivery import SEND_REPLY
from channels.telegram.channel import TelegramChannel
from harness.events import REPLY_READY
from harness.runtime import Runtime, publish, run_id_for
from harness.runtime.testing import drain
from tests.channels.channel_doubles import AfterChunkPosted
from tests.fakes.telegram_api import FakeTelegramApi
from tests.runtime_fixtures import ManualClock

CHAT = {"chat_id": "1111111"}


class WorkerKilled(BaseException):
    """Stands for SIGKILL: not an `Exception`, so the runtime cannot catch it, retry or record
    anything; the run keeps its lease until the lease runs out, as after a real crash."""


class CrashesAfterPosting(AfterChunkPosted):
    """The real Telegram channel, except that the process "dies" right after the platform
    accepted the first chunk of `doomed_reply`, before the chunk was recorded as posted."""

    def __init__(self, channel: TelegramChannel, doomed_reply: str) -> None:
        super().__init__(channel)
        self._doomed = doomed_reply

    def chunk_posted(
        self, reply_key: str, index: int, message_id: str, record: ChunkSent | None
    ) -> None:
        if reply_key == self._doomed:
            self._doomed = ""
            raise WorkerKilled()
        super().chunk_posted(reply_key, index, message_id, record)


def publish_reply(bus: Runtime, text: str, reply_id: str) -> None:
    data = {"response": text, "channel": "telegram", "destination": CHAT, "run_id": "r-agent"}
    publish({"name": REPLY_READY, "id": reply_id, "data": data}, runtime=bus)


def out_of_order(texts: Sequence[str], expected: Sequence[str]) -> list[str]:
    """The replies that were posted after a later reply of the same chat."""
    late = []
    for i, earlier in enumerate(expected):
        last = max((n for n, t in enumerate(texts) if t == earlier), default=-1)
        later = [n for n, t in enumerate(texts) if t in expected[i + 1 :]]
        if later and last > min(later):
            late.append(earlier)
    return late


def test_send_reply_after_a_crash_mid_delivery_keeps_the_chats_order(
    bus: Runtime, clock: ManualClock, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given the worker delivering m0 dies right after Telegram accepted it, before recording it
    channel_registry.reset()
    channel_registry.register("telegram", lambda: CrashesAfterPosting(telegram, "reply-0"))
    publish_reply(bus, "m0", "reply-0")
    with pytest.raises(WorkerKilled):
        drain(bus)
    # When the agent's next reply is ready while m0's delivery still holds its lease, and later
    # the lease runs out, the run is retried, and a third reply follows
    publish_reply(bus, "m1", "reply-1")
    drain(bus)
    clock.advance(bus.lease_ttl + 1)
    drain(bus)
    publish_reply(bus, "m2", "reply-2")
    drain(bus)
    # Then the chat saw its replies in order: only the chunk in flight at the crash came twice
    texts = [m["text"] for m in telegram_api.messages]
    assert out_of_order(texts, ["m0", "m1", "m2"]) == [], f"posted out of order: {texts}"
    assert texts == ["m0", "m0", "m1", "m2"], f"got {texts}"
    for n in range(3):
        run = bus.ledger.run(run_id_for(SEND_REPLY, f"reply-{n}"))
        assert run is not None and run.status == "completed", f"reply-{n}: {run}"


def test_send_reply_of_another_chat_does_not_wait(
    bus: Runtime, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a delivery to one chat stuck after a crash
    channel_registry.reset()
    channel_registry.register("telegram", lambda: CrashesAfterPosting(telegram, "reply-0"))
    publish_reply(bus, "m0", "reply-0")
    with pytest.raises(WorkerKilled):
        drain(bus)
    # When a reply to another chat is ready
    data = {"response": "hi", "channel": "telegram", "destination": {"chat_id": "2222222"},
            "run_id": "r-other"}  # fmt: skip
    publish({"name": REPLY_READY, "id": "other", "data": data}, runtime=bus)
    drain(bus)
    # Then it goes out at once
    assert [m["text"] for m in telegram_api.messages] == ["m0", "hi"]
