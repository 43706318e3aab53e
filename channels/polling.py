"""Receiving messages without a public URL: a process of ours fetches them instead of webhooks.

`run_polling` drives a `ResumablePollingChannel` (Telegram's getUpdates with
`TELEGRAM_MODE=polling`): it removes any webhook (`channel.setup()`), then long-polls.
Every message is published exactly as a webhook's would be, and only then is the batch's
cursor saved in Redis (`<prefix>:<channel>:offset`) and passed to the next poll, which confirms
the batch to the platform. A crash in between fetches the batch again; its events keep their
ids, so the bus drops the duplicates and no message is lost.

`listener_channels` and `run_listener` are what `harness poll <channel>` and `harness up` use:
they pick polling or Slack's Socket Mode (`channels.socket_mode`) per channel.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import redis

from channels.base import Channel, Ignored, Inbound, Publish, ResumablePollingChannel
from channels.errors import (
    AuthenticationError,
    ChannelNotConfiguredError,
    PermanentPlatformError,
    PlatformError,
    RateLimited,
)
from channels.registry import get_channel, names
from harness.errors import ConfigurationError, InvalidEventError
from harness.runtime import PublishResult, Runtime, publish

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 60.0


def publish_inbound(inbound: Inbound, runtime: Runtime, *, source: str) -> PublishResult | None:
    """Do what a webhook does with a transformed message: publish a `Publish` (duplicates are
    fine), log an `Ignored` at INFO. A `Respond` has no meaning without an HTTP caller and is
    dropped, and so is an event that fails validation (logged as an error). Returns the publish
    result, or None. Raises `redis.RedisError` when the bus is down, so that the caller does not
    confirm the message to the platform."""
    if isinstance(inbound, Ignored):
        log.info("%s ignored: %s", source, inbound.reason)
        return None
    if not isinstance(inbound, Publish):
        log.info("%s: a handshake that needs no answer here; ignored", source)
        return None
    try:
        result = publish(inbound.event, runtime=runtime)
    except InvalidEventError as exc:  # retrying cannot fix it: skip, or it blocks the rest
        log.error("%s: the channel built an invalid event, dropped: %s", source, exc)
        return None
    if not result.duplicate:
        log.info("%s: published %s", source, result.event_id)
    return result


def offset_key(runtime: Runtime, channel_name: str) -> str:
    """The Redis key holding a polling channel's cursor."""
    return f"{runtime.keys.prefix}:{channel_name}:offset"


def poll_once(channel: ResumablePollingChannel, runtime: Runtime, timeout: float = 30.0) -> int:
    """One long poll: fetch from the saved cursor, publish every message, then save the new
    cursor. Returns how many messages were fetched. Raises a `PlatformError` (nothing fetched)
    or `redis.RedisError` (the cursor is not advanced; the batch comes again)."""
    key = offset_key(runtime, channel.name)
    cursor = runtime.redis.get(key)
    batch = channel.poll_from(str(cursor) if cursor is not None else None, timeout)
    for inbound in batch.inbound:
        publish_inbound(inbound, runtime, source=f"{channel.name} update")
    if batch.cursor is not None and batch.cursor != cursor:
        runtime.redis.set(key, batch.cursor)
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
    409, a 429, the network) and Redis errors are logged and retried with backoff; a rejected
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
        except (PlatformError, redis.RedisError) as exc:
            failures += 1
            set_up = set_up and not isinstance(exc, PermanentPlatformError)
            delay = retry_delay(exc, failures)
            log.warning("%s polling failed (%s); retrying in %.0f s", channel.name, exc, delay)
            wait(delay)
            continue
        failures = 0


def listener_channels() -> list[str]:
    """The configured channels that receive messages through a process of ours instead of
    webhooks: polling channels in polling mode, and Slack with SLACK_APP_TOKEN (Socket Mode).
    A channel with an invalid setting is logged and left out. Touches no network."""
    from channels.socket_mode import socket_mode_enabled

    found = []
    for name in names():
        try:
            channel = get_channel(name)
        except ChannelNotConfiguredError:
            continue
        except ConfigurationError as exc:
            log.warning("channel %s is misconfigured: %s", name, exc)
            continue
        if _polls(channel) or socket_mode_enabled(channel):
            found.append(name)
    return found


def run_listener(name: str, runtime: Runtime, stop: threading.Event) -> None:
    """Receive messages for channel `name` until `stop` is set: poll it, or open Slack's
    Socket Mode connection. Raises `ConfigurationError` when the channel is configured for
    webhooks, or a `ChannelError`."""
    from channels.socket_mode import run_socket_mode, socket_mode_enabled

    channel = get_channel(name)
    if isinstance(channel, ResumablePollingChannel) and _polls(channel):
        run_polling(runtime, stop, channel)
    elif socket_mode_enabled(channel):
        run_socket_mode(runtime, stop, channel)
    else:
        raise ConfigurationError(
            f"channel {name!r} receives webhooks; nothing to poll (for Telegram set "
            "TELEGRAM_MODE=polling, for Slack set SLACK_APP_TOKEN)"
        )


def _polls(channel: Channel) -> bool:
    return isinstance(channel, ResumablePollingChannel) and channel.polling
