"""Listener cursors and undelivered replies. Every test runs on the Redis store and on its
in-memory twin (`stores`)."""

from __future__ import annotations

import pytest

from harness.events import REPLY_READY
from harness.records import undelivered
from harness.records.undelivered import RedisUndeliveredReplies, UndeliveredReply
from harness.runtime import Runtime
from tests.records.conftest import Stores


def test_cursors_remember_the_last_value_per_listener(stores: Stores) -> None:
    # Given no cursor saved yet
    assert stores.cursors.get("telegram") is None
    # When two listeners save theirs
    stores.cursors.set("telegram", "41")
    stores.cursors.set("telegram", "42")
    stores.cursors.set("other", "7")
    # Then each reads back its latest
    assert (stores.cursors.get("telegram"), stores.cursors.get("other")) == ("42", "7")


def _reply(reply_id: str, chat_id: str, at_ms: int) -> UndeliveredReply:
    event: dict[str, object] = {"name": REPLY_READY, "data": {"response": reply_id}}
    return UndeliveredReply(
        reply_id=reply_id, run_id=f"run-{reply_id}", channel="telegram", chat_id=chat_id,
        event=event, error="timed out", at_ms=at_ms,
    )  # fmt: skip


def test_undelivered_replies_are_kept_per_chat_oldest_first_until_discarded(
    stores: Stores,
) -> None:
    # Given three replies given up on, in two chats, one of them given up on twice
    kept = stores.undelivered
    kept.record(_reply("r2", "1", at_ms=20))
    kept.record(_reply("r1", "1", at_ms=5))
    kept.record(_reply("r1", "1", at_ms=10))
    kept.record(_reply("r3", "2", at_ms=30))
    # Then each reads back, oldest first, the later give-up replacing the earlier
    assert [r.reply_id for r in kept.all()] == ["r1", "r2", "r3"]
    assert [r.reply_id for r in kept.for_chat("telegram", "1")] == ["r1", "r2"]
    assert kept.get("r1") == _reply("r1", "1", at_ms=10)
    # When one is discarded (and an unknown one)
    kept.discard("r1")
    kept.discard("never")
    # Then it is gone
    assert kept.get("r1") is None
    assert [r.reply_id for r in kept.all()] == ["r2", "r3"]


def test_a_chats_replies_are_read_without_reading_every_chats(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a thousand replies given up on in other chats, and one in this chat
    kept = stores.undelivered
    for i in range(1000):
        kept.record(_reply(f"other-{i}", str(10_000 + i), at_ms=i))
    kept.record(_reply("mine", "1", at_ms=5))
    kept.for_chat("telegram", "1")  # a first look, which may index what was kept before
    parsed: list[object] = []
    real = undelivered._parse
    monkeypatch.setattr(undelivered, "_parse", lambda raw: parsed.append(raw) or real(raw))
    # When this chat's turn, and a chat with none, look for their undelivered replies
    mine = kept.for_chat("telegram", "1")
    none = kept.for_chat("telegram", "2")
    # Then each read its own chat's replies only
    assert [r.reply_id for r in mine] == ["mine"] and none == []
    if stores.kind == "redis":
        assert len(parsed) == 1, f"{len(parsed)} replies read for one chat's one"


def test_replies_kept_before_the_chat_index_are_found_and_discarded(
    runtime: Runtime,
) -> None:
    # Given replies an earlier version kept in the hash alone (no index by chat)
    keys = runtime.keys
    for reply in (_reply("old1", "1", at_ms=1), _reply("old2", "2", at_ms=2)):
        runtime.redis.hset(keys.undelivered(), reply.reply_id, reply.model_dump_json())
    kept = RedisUndeliveredReplies(runtime.redis, keys)
    # When this version looks for a chat's undelivered replies
    found = kept.for_chat("telegram", "1")
    # Then it finds the old one, and every chat's old replies are indexed
    assert [r.reply_id for r in found] == ["old1"]
    assert [r.reply_id for r in kept.for_chat("telegram", "2")] == ["old2"]
    # And a discarded one is gone from the chat's index too
    kept.discard("old1")
    assert kept.for_chat("telegram", "1") == []
    assert runtime.redis.smembers(keys.undelivered_of("telegram", "1")) == set()
