"""Fire-and-forget messages to whoever listens right now (Redis pub/sub): live progress.

Nothing is stored: a message published while nobody is subscribed is gone. Errors are
`BusUnavailableError`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import redis

from harness.errors import BusUnavailableError
from harness.runtime.bus_errors import redis_errors

log = logging.getLogger(__name__)

_SUBSCRIBE_ACK_TIMEOUT_S = 5.0


class Broadcast:
    """Publishes to, and subscribes to, named pub/sub channels on one Redis client."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def publish(self, channel: str, message: str) -> None:
        """Send `message` to the current subscribers of `channel` (none is fine)."""
        with redis_errors("publish to a pub/sub channel"):
            self._redis.publish(channel, message)

    def publish_all(self, messages: list[tuple[str, str]]) -> None:
        """`publish` each (channel, message), in order, in one round trip."""
        with redis_errors("publish to pub/sub channels"):
            pipe = self._redis.pipeline(transaction=False)
            for channel, message in messages:
                pipe.publish(channel, message)
            pipe.execute()

    def subscribe(self, channel: str) -> Subscription:
        """A subscription to `channel` that sees everything published after this returns
        (it waits up to 5 s for Redis to confirm, then goes on with a warning)."""
        return Subscription(self._redis, channel)

    def subscribe_pattern(self, pattern: str) -> Subscription:
        """A subscription to every channel matching the glob `pattern`, like `subscribe`;
        its `get` says which channel each message came from."""
        return Subscription(self._redis, pattern, pattern=True)


class Subscription:
    """Messages of one channel (or, with `pattern`, of every channel matching the glob
    `channel`), on a connection of its own until `close`. One reader."""

    def __init__(self, client: redis.Redis, channel: str, *, pattern: bool = False) -> None:
        self.channel = channel
        self._pubsub: Any = client.pubsub()  # type: ignore[no-untyped-call, unused-ignore]
        self._kinds = ("psubscribe", "pmessage") if pattern else ("subscribe", "message")
        try:
            with redis_errors("subscribe to a pub/sub channel"):
                getattr(self._pubsub, self._kinds[0])(channel)
                self._await_ack()
        except BusUnavailableError:
            self.close()
            raise

    def _await_ack(self) -> None:
        deadline = time.monotonic() + _SUBSCRIBE_ACK_TIMEOUT_S
        while (left := deadline - time.monotonic()) > 0:
            message = self._pubsub.get_message(timeout=left)
            if message is not None and message.get("type") == self._kinds[0]:
                return
        log.warning("subscription to %s not confirmed; going on", self.channel)

    def get_message(self, timeout: float) -> Any | None:
        """The payload of the next message, waiting up to `timeout` seconds; None when none
        came in time. Raises `BusUnavailableError` when the connection fails."""
        got = self.get(timeout)
        return None if got is None else got[1]

    def get(self, timeout: float) -> tuple[str, Any] | None:
        """(channel, payload) of the next message, waiting up to `timeout` seconds; None when
        none came in time. Raises `BusUnavailableError` when the connection fails."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            left = deadline - time.monotonic()
            with redis_errors("read from the pub/sub connection"):
                message = self._pubsub.get_message(timeout=max(left, 0.0))
            if message is not None and message.get("type") == self._kinds[1]:
                return str(message.get("channel")), message.get("data")
            if message is None and left <= 0:
                return None

    def close(self) -> None:
        """Unsubscribe and release the connection. Idempotent; must not raise."""
        try:
            self._pubsub.close()
        except Exception as exc:  # closing a broken connection may raise anything
            log.debug("closing subscription to %s failed: %s", self.channel, type(exc).__name__)
