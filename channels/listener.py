"""What receiving without webhooks has in common, whatever the platform.

A listener is a process of ours that fetches messages (long polling) or holds a connection
(Slack's Socket Mode) instead of waiting for webhooks. Each publishes what it receives
exactly as the webhook route would (`publish_inbound`), and only then confirms it to the
platform (advances a cursor, acknowledges an envelope), so that no message is lost when the
bus is down: the platform hands it over again, and its event id makes that harmless.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from channels.base import Ignored, Inbound, Publish
from harness.errors import InvalidEventError
from harness.runtime import PublishResult, Runtime, publish

log = logging.getLogger(__name__)


class Listener(Protocol):
    """Receives one channel's messages and publishes them until told to stop."""

    def run(self, stop: threading.Event) -> None:
        """Receive and publish until `stop` is set. Transient failures are retried inside;
        raises only for what will not fix itself (a rejected token, a missing setting)."""


def publish_inbound(inbound: Inbound, runtime: Runtime, *, source: str) -> PublishResult | None:
    """Do what a webhook does with a transformed message: publish a `Publish` (duplicates are
    fine), log an `Ignored` at INFO. A `Respond` has no meaning without an HTTP caller and is
    dropped, and so is an event that fails validation (logged as an error). Returns the publish
    result, or None. Raises `BusUnavailableError` when the bus is down, so that the caller
    does not confirm the message to the platform."""
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
