"""Receiving messages without a public URL: a process of ours fetches them instead of webhooks.

`run_polling` drives a `ResumablePollingChannel` (Telegram's getUpdates with
`TELEGRAM_MODE=polling`): it removes any webhook (`channel.setup()`), then long-polls.
Every message is published exactly as a webhook's would be, and only then is the batch's
cursor saved in Redis (`<prefix>:<channel>:offset`) and passed to the next poll, which confirms
the batch to the platform. A crash in between fetches the batch again; its events keep their
ids, so the bus drops the duplicates and no message is lost.

`PollingListener` is the `channels.listener.Listener` that `channels.listeners` starts for
such a channel.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from channels.base import Channel, ResumablePollingChannel
from channels.errors import (
    AuthenticationError,
    PermanentPlatformError,
    PlatformError,
    RateLimited,
)
from channels.listener import publish_inbound
from harness.errors import BusUnavailableError, ConfigurationError
from harness.records.stores import Records, redis_records
from harness.runtime import Runtime

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 60.0


def offset_key(runtime: Runtime, channel_name: str) -> str:
    """The Redis key holding a polling channel's cursor (see `harness.records.cursors`)."""
    return runtime.keys.listener_cursor(channel_name)


def poll_once(
    channel: ResumablePollingChannel,
    runtime: Runtime,
    timeout: float = 30.0,
    records: Records | None = None,
) -> int:
    """One long poll: fetch from the saved cursor, publish every message, then save the new
    cursor (in `records`, by default the runtime's Redis ones). Returns how many messages were
    fetched. Raises a `PlatformError` (nothing fetched) or `BusUnavailableError` (the cursor
    is not advanced; the batch comes again)."""
    cursors = (records or redis_records(runtime)).cursors
    cursor = cursors.get(channel.name)
    batch = channel.poll_from(cursor, timeout)
    for inbound in batch.inbound:
        publish_inbound(inbound, runtime, source=f"{channel.name} update")
    if batch.cursor is not None and batch.cursor != cursor:
        cursors.set(channel.name, batch.cursor)
    return len(batch.inbound)


def retry_delay(exc: Exception, failures: int) -> float:
    """Seconds to wait after the `failures`-th failure in a row: what a rate limit asks for,
    else 1, 2, 4, ... up to `MAX_BACKOFF_S`."""
    if isinstance(exc, RateLimited):
        return max(exc.retry_after, 0.0)
    return float(min(2.0 ** max(failures - 1, 0), MAX_BACKOFF_S))


def run_polling(
    runtime: Runtime,
    stop: threading.Event,
    channel: ResumablePollingChannel,
    *,
    timeout: float = 30.0,
    wait: Callable[[float], bool] | None = None,
) -> None:
    """Poll `channel` until `stop` is set, removing its webhook first (`channel.setup()`, again
    after a permanent error such as Telegram's 409 while a webhook is set). Platform errors (a
    409, a 429, the network) and bus errors are logged and retried with backoff; a rejected
    token raises `AuthenticationError`, since it will not fix itself. `wait(seconds)` sleeps
    between retries and returns True to stop (default `stop.wait`)."""
    if not channel.polling:
        raise ConfigurationError(f"channel {channel.name!r} is not configured to poll")
    wait = wait or stop.wait
    set_up = False
    failures = 0
    while not stop.is_set():
        try:
            if not set_up:
                log.info("%s polling: %s", channel.name, channel.setup())
                set_up = True
            poll_once(channel, runtime, timeout)
        except AuthenticationError:
            raise
        except (PlatformError, BusUnavailableError) as exc:
            failures += 1
            set_up = set_up and not isinstance(exc, PermanentPlatformError)
            delay = retry_delay(exc, failures)
            log.warning("%s polling failed (%s); retrying in %.0f s", channel.name, exc, delay)
            wait(delay)
            continue
        failures = 0


class PollingListener:
    """The `Listener` of a channel in polling mode: `run_polling` with default timings."""

    def __init__(self, runtime: Runtime, channel: ResumablePollingChannel) -> None:
        self.runtime = runtime
        self.channel = channel

    def run(self, stop: threading.Event) -> None:
        """Poll until `stop` is set (see `run_polling`)."""
        run_polling(self.runtime, stop, self.channel)


def polls(channel: Channel) -> bool:
    """True for a channel that can poll and is configured to."""
    return isinstance(channel, ResumablePollingChannel) and channel.polling
