"""Where a chat exchange reads what happens to its message: progress and stream events.

Two implementations of one small contract. `DirectFeed` holds the exchange's own progress
subscription and reads the events stream itself (two Redis connections while it is open): the
terminal chat, one exchange per process, keeps this path. `harness.chat_hub.ChatHub` hands
out feeds fed by one reader per process, holding no connection each: `POST /api/chat`, with
hundreds of exchanges open at once.
"""

from __future__ import annotations

from typing import Any, Protocol

from harness.agent.progress import Progress, ProgressSubscription, subscribe
from harness.runtime import Runtime
from harness.runtime.stream import latest_cursor, read_events

FeedItem = Progress | dict[str, Any]
"""A progress message, or an event of the stream (its dict; not necessarily this chat's)."""


class Feed(Protocol):
    """What one exchange reads. Not thread-safe: one reader."""

    def next(self, timeout: float) -> FeedItem | None:
        """The next item, waiting up to `timeout` seconds; None when none came. Raises
        `BusUnavailableError` when Redis fails and the feed gives up at once."""

    @property
    def down(self) -> bool:
        """True while Redis cannot be reached (a waiter past its deadline then reports the
        bus unavailable rather than a timeout)."""

    def close(self) -> None:
        """Release what the feed holds. Idempotent; must not raise."""


class FeedSource(Protocol):
    """Opens feeds: call `open` before publishing, so nothing published after is missed."""

    def open(self, runtime: Runtime, session_key: str, channel: str, event_id: str) -> Feed:
        """A feed for the exchange of event `event_id` in `session_key` on `channel`.
        Raises `BusUnavailableError` (nothing held) when Redis fails."""


class DirectFeed:
    """A feed on connections of its own: a progress subscription, and XREAD from the cursor
    taken when opened, waiting at most `poll_interval` so progress is not held back."""

    def __init__(self, runtime: Runtime, session_key: str, poll_interval: float) -> None:
        self._runtime = runtime
        self._poll_interval = poll_interval
        self._progress: ProgressSubscription = subscribe(runtime, session_key)
        self._events: list[dict[str, Any]] = []
        """Read from the stream but not yet returned (one read may hold several)."""
        try:
            self._cursor = latest_cursor(runtime)
        except BaseException:
            self._progress.close()
            raise

    def next(self, timeout: float) -> FeedItem | None:
        """See `Feed.next`; raises `BusUnavailableError` at the first failed read."""
        message = self._progress.get(timeout=0)
        if message is not None:
            return message
        if not self._events:
            wait_ms = int(min(timeout, self._poll_interval) * 1000)
            self._cursor, self._events = read_events(self._runtime, self._cursor, wait_ms)
        return self._events.pop(0) if self._events else None

    @property
    def down(self) -> bool:
        """Never: a direct feed raises at the first failure instead."""
        return False

    def close(self) -> None:
        """Unsubscribe from progress. Idempotent; must not raise."""
        self._progress.close()


class DirectFeeds:
    """The `FeedSource` of `DirectFeed`s: each exchange reads for itself."""

    def __init__(self, poll_interval: float) -> None:
        self.poll_interval = poll_interval

    def open(self, runtime: Runtime, session_key: str, channel: str, event_id: str) -> Feed:
        """A `DirectFeed` for the session (the channel and event id are matched by the
        exchange). Raises `BusUnavailableError` when Redis fails."""
        return DirectFeed(runtime, session_key, self.poll_interval)
