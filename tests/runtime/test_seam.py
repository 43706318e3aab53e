"""The Redis seam: callers outside the runtime get our errors and small APIs, never redis's."""

from __future__ import annotations

import pytest
import redis

from harness.errors import BusUnavailableError
from harness.runtime import Runtime, publish
from harness.runtime.draft_records import DraftRecord
from harness.runtime.stream import read_events


def test_publish_with_redis_down_raises_bus_unavailable(unreachable_runtime: Runtime) -> None:
    # Given a Redis that cannot be reached
    # When an event is published
    with pytest.raises(BusUnavailableError) as raised:
        publish({"name": "app/x"}, runtime=unreachable_runtime)
    # Then the error is ours, with the client's error kept as its cause
    assert isinstance(raised.value.__cause__, redis.RedisError)


def test_ping_and_stream_reads_with_redis_down_raise_bus_unavailable(
    unreachable_runtime: Runtime,
) -> None:
    with pytest.raises(BusUnavailableError):
        unreachable_runtime.ping()
    with pytest.raises(BusUnavailableError):
        read_events(unreachable_runtime, "0-0", block_ms=1)


def test_cursors_remember_the_last_value_per_listener(runtime: Runtime) -> None:
    # Given no cursor saved yet
    assert runtime.cursors.get("telegram") is None
    # When two listeners save theirs
    runtime.cursors.set("telegram", "41")
    runtime.cursors.set("telegram", "42")
    runtime.cursors.set("other", "7")
    # Then each reads back its latest
    assert (runtime.cursors.get("telegram"), runtime.cursors.get("other")) == ("42", "7")


def test_delivery_records_expire_within_a_week(runtime: Runtime) -> None:
    # Given a recorded chunk of a reply
    runtime.deliveries.record("reply-1", 0, "m-100")
    # Then it reads back, and its record expires
    assert runtime.deliveries.posted("reply-1") == {0: "m-100"}
    assert 0 < runtime.redis.ttl(runtime.keys.reply_chunks("reply-1")) <= 7 * 86_400


def test_draft_record_keeps_the_message_and_the_hold_apart_and_expires(runtime: Runtime) -> None:
    # Given a run with no draft yet
    assert runtime.drafts.get("run-1") == DraftRecord()
    # When its draft is posted, then held by the platform
    runtime.drafts.record_message("run-1", "m-7")
    runtime.drafts.hold_until("run-1", 1_800_000_000_500)
    # Then both read back as what they are, no delivery record was written, and it expires
    assert runtime.drafts.get("run-1") == DraftRecord("m-7", 1_800_000_000_500)
    assert runtime.deliveries.posted("draft:run-1") == {}
    assert 0 < runtime.redis.ttl(runtime.keys.draft("run-1")) <= 7 * 86_400


def test_broadcast_reaches_a_subscriber_that_subscribed_first(runtime: Runtime) -> None:
    # Given a subscriber
    subscription = runtime.broadcast.subscribe("harness:progress:s1")
    try:
        # When a message is published on its channel
        runtime.broadcast.publish("harness:progress:s1", "hello")
        # Then it receives it, and nothing more
        assert subscription.get_message(timeout=2) == "hello"
        assert subscription.get_message(timeout=0) is None
    finally:
        subscription.close()
