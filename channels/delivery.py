"""`send-reply`: post `agent.reply.ready` on its channel, each chunk once across retries, then
mark the turn complete, in one durable step; and post `agent.file.ready` (a file the agent
sends), once.

Replies and files of one chat go out one at a time, in the order they were published
(`DELIVERY_ORDER`): a file the agent sends before it answers reaches the person before the
answer, across crashes and retries.
A platform that keeps failing is retried with backoff (honouring `retry_after`) for
`DELIVERY_RETRY_FOR` after the run's first attempt began; then the reply is recorded as
undelivered (`records.undelivered`) and the run fails with `DeliveryGaveUp`, which frees the
chat's next reply. The undelivered reply goes
out when the person writes next (`harness.agent.arrival`) or through `harness runs redeliver`.

Notices (failure, reconsider) are published as `agent.reply.ready` too, so they are delivered,
retried and deduplicated here like any reply.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from channels.base import Channel, recovering
from channels.drafts import DraftLog, drafting
from channels.errors import PlatformError
from channels.media.outbox import post_file
from channels.registry import channel_or_none
from harness.errors import ConfigurationError, NonRetriableError
from harness.events import FILE_READY, REPLY_READY, FileReady, ReplyReady
from harness.records.stores import Records, redis_records
from harness.records.undelivered import REDELIVERS, UndeliveredReply
from harness.runtime import Context, Runtime, Singleton, event, function
from harness.runtime.durations import parse_duration
from harness.runtime.functions import DELIVERY_QUEUE
from harness.settings import get_settings

log = logging.getLogger(__name__)

SEND_REPLY = "send-reply"
DELIVER_STEP = "deliver"
"""The one step of a reply's delivery: its chunks posted, then the turn marked complete."""
DELIVERY_ATTEMPTS = 1_000
"""Retries are bounded by time (`DELIVERY_RETRY_FOR`), not by count: the backoff doubles up to
five minutes, so this many attempts is never reached before the deadline."""


class DeliveryGaveUp(NonRetriableError):
    """The platform kept failing for `DELIVERY_RETRY_FOR`; the reply was recorded as
    undelivered."""


class DeliveryLog:
    """Which chunks of one reply are already on the platform (`records.deliveries`, kept for a
    week). Written right after each post, so a retry of `send-reply` skips what an earlier
    attempt posted. One attempt reads the record once and keeps its own view up to date as
    it records: while it runs it holds the run's lease, so nothing else writes the record.
    `records` defaults to the runtime's Redis ones. Methods raise `BusUnavailableError` when
    Redis fails."""

    def __init__(self, runtime: Runtime, reply_id: str, records: Records | None = None) -> None:
        self._records = (records or redis_records(runtime)).deliveries
        self.reply_id = reply_id
        self._posted: dict[int, str] | None = None

    def posted(self) -> dict[int, str]:
        """Chunk index -> platform message id, for every chunk posted so far."""
        if self._posted is None:
            self._posted = self._records.posted(self.reply_id)
        return dict(self._posted)

    def record(self, index: int, message_id: str) -> None:
        """Remember that chunk `index` was posted as `message_id`."""
        self._records.record(self.reply_id, index, message_id)
        if self._posted is not None:
            self._posted[index] = message_id

    def begin(self) -> bool:
        """Note that an attempt starts; True when an earlier one already did."""
        return self._records.begin(self.reply_id)


DELIVERY_ORDER = Singleton(key="event.data.destination.chat_id", mode="queue")
"""One delivery at a time per chat, in the order the replies and files were published: each
waits until the previous one of its chat was posted (or given up), across crashes and
retries, so a chat never sees `m0, m1, m0`, nor the answer before the file it talks about.
Chats of two platforms that share an id only wait for each other, which is harmless."""


@function(
    id=SEND_REPLY,
    trigger=(event(REPLY_READY), event(FILE_READY)),
    retries=DELIVERY_ATTEMPTS,
    singleton=DELIVERY_ORDER,
    queue=DELIVERY_QUEUE,
)
def send_reply(ctx: Context) -> dict[str, Any]:
    """Post `agent.reply.ready` on its channel, then mark the turn complete (Slack: :eyes: ->
    :white_check_mark:). Idempotent per reply: every chunk is posted at most once across
    retries and redeliveries (see `DeliveryLog`); transient platform errors are retried with
    backoff until `DELIVERY_RETRY_FOR` has passed since the first attempt, then the reply is
    recorded as undelivered and the run fails with `DeliveryGaveUp`; permanent errors
    (`PermanentPlatformError`) fail the run at once. Returns the posted message ids.

    For `agent.file.ready` the same holds for the one post of the file, except that a file
    given up on is not redelivered later (the failure notice tells the person)."""
    if ctx.event.name == FILE_READY:
        return _send_file(ctx)
    data = ReplyReady.from_event(ctx.event)
    channel = channel_or_none(data.channel)
    if channel is None:
        return {"posted": []}
    reply_id = str(data.channel_meta.platform.get(REDELIVERS) or ctx.event.id)
    attempt = _Attempt(ctx.runtime, ctx.run_id, reply_id, _deadline(ctx))
    raw_event = ctx.event.model_dump(mode="json")
    # One step posts and completes: a retry after a crash between the two posts nothing again
    # (`DeliveryLog`) and completes, which is idempotent. Not named "send": a run an earlier
    # version left with "send" recorded and "complete" not must still complete here.
    posted = ctx.step.run(DELIVER_STEP, _deliver_and_complete, attempt, data, raw_event)
    return {"posted": posted}


def _send_file(ctx: Context) -> dict[str, Any]:
    data = FileReady.from_event(ctx.event)
    if channel_or_none(data.channel) is None:
        return {"posted": []}
    attempt = _Attempt(ctx.runtime, ctx.run_id, ctx.event.id, _deadline(ctx))
    posted = ctx.step.run("send-file", _deliver_file, attempt, data)
    return {"posted": [posted]}


def _deliver_file(attempt: _Attempt, data: FileReady) -> str:
    try:
        return post_file(DeliveryLog(attempt.runtime, attempt.reply_id, attempt.records), data)
    except NonRetriableError:
        raise
    except Exception as exc:
        if not attempt.overdue():
            raise
        error = f"{type(exc).__name__}: {exc}"[:500]
        raise DeliveryGaveUp(
            f"file {data.name} undelivered after {get_settings().delivery_retry_for} of "
            f"retries ({error})"
        ) from exc


def _deadline(ctx: Context) -> int:
    """When to stop retrying, ms since the epoch: `DELIVERY_RETRY_FOR` after the run's first
    attempt began (`Context.started_ms`, the same on every attempt), so it needs no step."""
    retry_for = parse_duration(get_settings().delivery_retry_for)
    return (ctx.started_ms or ctx.runtime.now_ms()) + int(retry_for * 1000)


class _Attempt:
    """One attempt of one delivery: the run, the reply it delivers, when to give up, and the
    records it reads and writes (the runtime's Redis ones)."""

    def __init__(self, runtime: Runtime, run_id: str, reply_id: str, deadline_ms: int) -> None:
        self.runtime, self.run_id, self.reply_id = runtime, run_id, reply_id
        self.deadline_ms = deadline_ms
        self.records = redis_records(runtime)

    def overdue(self) -> bool:
        """True once `DELIVERY_RETRY_FOR` has passed since the first attempt."""
        return self.runtime.now_ms() >= self.deadline_ms


def _deliver_and_complete(
    attempt: _Attempt, data: ReplyReady, raw_event: dict[str, Any]
) -> list[str]:
    """Post the reply's chunks not posted yet, then mark the turn complete; the posted
    message ids in chunk order. Safe to run again after any crash (see `send_reply`)."""
    posted = _deliver(attempt, data, raw_event)
    _complete(attempt, data)
    return posted


def _deliver(attempt: _Attempt, data: ReplyReady, raw_event: dict[str, Any]) -> list[str]:
    channel = channel_or_none(data.channel)
    if channel is None:
        raise ConfigurationError(f"channel {data.channel!r} is no longer available")
    delivery = DeliveryLog(attempt.runtime, attempt.reply_id, attempt.records)
    if delivery.begin():
        _recover(channel, data, delivery)
    _finish_draft(attempt, channel, data, delivery)
    already = delivery.posted()
    if already:
        log.info(
            "reply %s: %d chunk(s) already posted, skipping them", attempt.reply_id, len(already)
        )
    try:
        channel.send_reply(
            data.response,
            data.destination,
            data.channel_meta.platform,
            attempt.reply_id,
            skip_chunks=frozenset(already),
            on_chunk_sent=delivery.record,
        )
    except NonRetriableError:
        raise
    except Exception as exc:
        if not attempt.overdue():
            raise
        _give_up(attempt, data, raw_event, exc)
    return [message_id for _, message_id in sorted(delivery.posted().items())]


def _recover(channel: Channel, data: ReplyReady, delivery: DeliveryLog) -> None:
    """An earlier attempt may have posted chunks and died before recording them: where the
    platform can tell (`RecoveringChannel`), record those it already holds so they are not
    posted again."""
    if not recovering(channel):
        return
    try:
        found = channel.find_posted(
            data.response, data.destination, data.channel_meta.platform, delivery.reply_id
        )
    except PlatformError as exc:  # best effort: at worst the chunk in flight goes twice
        log.warning(
            "reply %s: could not look for chunks already posted: %s", delivery.reply_id, exc
        )
        return
    recorded = delivery.posted()
    for index, message_id in sorted(found.items()):
        if index not in recorded:
            log.info(
                "reply %s: chunk %d was already posted, recording it", delivery.reply_id, index
            )
            delivery.record(index, message_id)


def _finish_draft(
    attempt: _Attempt, channel: Channel, data: ReplyReady, delivery: DeliveryLog
) -> None:
    """When the run that wrote this reply streamed a draft, the reply's first chunk is that
    message, edited to the final text, instead of a new one. Idempotent across retries."""
    if not data.run_id or not data.response.strip() or not drafting(channel):
        return
    if 0 in delivery.posted():
        return
    drafts = DraftLog(attempt.runtime, data.run_id, attempt.records)
    message_id = drafts.message_id()
    if message_id is None:
        return
    # The last draft edit may have been a moment ago: wait out only what is left of the
    # platform's pace (at most one interval), not a 429's whole-second retry_after.
    wait = min(drafts.held_for(), channel.draft_interval(data.destination))
    if wait > 0:
        time.sleep(wait)
    channel.finish_draft(message_id, data.response, data.destination, data.channel_meta.platform)
    delivery.record(0, message_id)


def _give_up(
    attempt: _Attempt, data: ReplyReady, raw_event: dict[str, Any], exc: Exception
) -> None:
    error = f"{type(exc).__name__}: {exc}"[:500]
    attempt.records.undelivered.record(
        UndeliveredReply(
            reply_id=attempt.reply_id,
            run_id=attempt.run_id,
            channel=data.channel,
            chat_id=data.destination.chat_id,
            event=raw_event,
            error=error,
            at_ms=attempt.runtime.now_ms(),
        )
    )
    raise DeliveryGaveUp(
        f"reply undelivered after {get_settings().delivery_retry_for} of retries ({error}); "
        f"it goes out when the person writes next, or: harness runs redeliver {attempt.run_id}"
    ) from exc


def _complete(attempt: _Attempt, data: ReplyReady) -> None:
    """Mark the turn done on the platform. Cosmetic: retried (its step, the posts skipped as
    already made) until the deadline, then left. Idempotent: `Channel.complete` may run again
    after a crash (Slack's :white_check_mark: already there is a logged no-op)."""
    channel = channel_or_none(data.channel)
    if channel is None:
        return
    try:
        channel.complete(data.destination, data.channel_meta.platform)
    except NonRetriableError:
        raise
    except Exception as exc:
        if not attempt.overdue():
            raise
        log.warning("reply %s: could not mark the turn done (%s)", attempt.reply_id, exc)
