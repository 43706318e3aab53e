"""The Redis seam: callers outside the runtime get our errors and small APIs, never redis's."""

from __future__ import annotations

import pytest
import redis

from harness.errors import BusUnavailableError
from harness.runtime import Runtime, publish
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
