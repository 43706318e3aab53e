"""Listener cursors and undelivered replies. Every test runs on the Redis store and on its
in-memory twin (`stores`)."""

from __future__ import annotations

from harness.events import REPLY_READY
from harness.records.undelivered import UndeliveredReply
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
