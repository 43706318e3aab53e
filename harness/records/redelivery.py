"""Delivering a reply again after `send-reply` gave up on it: publish its redelivery event,
then forget it. Used when the person writes next (the first step of the turn or chat command,
`harness.agent.arrival`) and by `harness runs redeliver`."""

from __future__ import annotations

from harness.records.stores import Records, redis_records
from harness.records.undelivered import UndeliveredReply
from harness.runtime.bus import publish
from harness.runtime.instance import Runtime


def redeliver(runtime: Runtime, reply: UndeliveredReply, records: Records | None = None) -> str:
    """Publish `reply`'s redelivery event on `runtime`, then drop it from the undelivered
    replies of `records` (by default the runtime's Redis ones); returns the event id.
    Idempotent: a crash between the two, or two callers at once, publish one event (its id is
    fixed by the give-up). If the redelivery fails too, `send-reply` records the reply again.
    Raises `BusUnavailableError` when Redis fails."""
    event = reply.redelivery()
    publish(event, runtime=runtime)
    (records or redis_records(runtime)).undelivered.discard(reply.reply_id)
    return event.id


def redeliver_chat(
    runtime: Runtime, channel: str, chat_id: str, records: Records | None = None
) -> list[str]:
    """Redeliver every undelivered reply of one chat, oldest first; returns the event ids."""
    records = records or redis_records(runtime)
    kept = records.undelivered.for_chat(channel, chat_id)
    return [redeliver(runtime, reply, records) for reply in kept]
