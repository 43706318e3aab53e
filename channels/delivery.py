"""`send-reply`: post `agent.reply.ready` on its channel, each chunk once across retries, then
mark the turn complete.

Notices (failure, reconsider) are published as `agent.reply.ready` too, so they are delivered,
retried and deduplicated here like any reply.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from channels.registry import channel_or_none
from harness.errors import ConfigurationError
from harness.events import REPLY_READY, Destination, ReplyReady
from harness.runtime import Context, Runtime, event, function

log = logging.getLogger(__name__)

SEND_REPLY = "send-reply"


class DeliveryLog:
    """Which chunks of one reply are already on the platform (`runtime.deliveries`, kept for a
    week). Written right after each post, so a retry of `send-reply` skips what an earlier
    attempt posted. Methods raise `BusUnavailableError` when Redis fails."""

    def __init__(self, runtime: Runtime, reply_id: str) -> None:
        self._records = runtime.deliveries
        self.reply_id = reply_id

    def posted(self) -> dict[int, str]:
        """Chunk index -> platform message id, for every chunk posted so far."""
        return self._records.posted(self.reply_id)

    def record(self, index: int, message_id: str) -> None:
        """Remember that chunk `index` was posted as `message_id`."""
        self._records.record(self.reply_id, index, message_id)


@function(id=SEND_REPLY, trigger=event(REPLY_READY), retries=3)
def send_reply(ctx: Context) -> dict[str, Any]:
    """Post `agent.reply.ready` on its channel, then mark the turn complete (Slack: :eyes: ->
    :white_check_mark:). Idempotent per reply: every chunk is posted at most once across
    retries (see `DeliveryLog`); transient platform errors are retried with backoff, permanent
    ones (`PermanentPlatformError`) fail the run at once. Returns the posted message ids."""
    data = ReplyReady.from_event(ctx.event)
    channel = channel_or_none(data.channel)
    if channel is None:
        return {"posted": []}
    posted = ctx.step.run("send", _deliver, ctx.runtime, ctx.event.id, data)
    ctx.step.run("complete", _complete, data.channel, data.destination, data.channel_meta)
    return {"posted": posted}


def _deliver(runtime: Runtime, reply_id: str, data: ReplyReady) -> list[str]:
    channel = channel_or_none(data.channel)
    if channel is None:
        raise ConfigurationError(f"channel {data.channel!r} is no longer available")
    delivery = DeliveryLog(runtime, reply_id)
    already = delivery.posted()
    if already:
        log.info("reply %s: %d chunk(s) already posted, skipping them", reply_id, len(already))
    channel.send_reply(
        data.response,
        data.destination,
        data.channel_meta,
        reply_id,
        skip_chunks=frozenset(already),
        on_chunk_sent=delivery.record,
    )
    return [message_id for _, message_id in sorted(delivery.posted().items())]


def _complete(name: str, destination: Destination, meta: Mapping[str, Any]) -> None:
    channel = channel_or_none(name)
    if channel is not None:
        channel.complete(destination, meta)
