"""The channels' functions on the bus: acknowledge a message, deliver a reply, and tell the user
when a turn failed or was superseded.

Workers load this module. Each function finds its channel in `channels.registry` by the
event's `channel` field, so nothing here knows a platform. Events of channels that are not
registered (the terminal `cli`, the HTTP API) are skipped: their clients read replies from the
events stream.

    agent.message.received  -> acknowledge-message   typing / :eyes:, refreshed until the reply
    agent.reply.ready       -> send-reply            post the chunks once each, then complete
    function.failed         -> global-failure-handler  "Sorry - something went wrong", once
    function.cancelled      -> reconsider-notice     "Got your new message - reconsidering."

Notices are published as `agent.reply.ready` (with `channel_meta.harness_notice` set), so they
are delivered, retried and deduplicated by `send-reply` like any reply.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from channels.base import Channel, RefreshingChannel
from channels.errors import UnknownChannelError
from channels.registry import get_channel
from harness.agent.functions import HANDLE_MESSAGE
from harness.errors import ConfigurationError
from harness.events import (
    FUNCTION_CANCELLED,
    FUNCTION_FAILED,
    MESSAGE_RECEIVED,
    REPLY_READY,
    Destination,
    Event,
    FunctionCancelled,
    FunctionFailed,
    MessageReceived,
    ReplyReady,
)
from harness.runtime import Context, Runtime, event, function, run_id_for

log = logging.getLogger(__name__)

ACKNOWLEDGE = "acknowledge-message"
SEND_REPLY = "send-reply"
FAILURE_HANDLER = "global-failure-handler"
RECONSIDER_NOTICE = "reconsider-notice"

FAILURE_TEXT = (
    "Sorry — something went wrong while I was working on that. The error was logged (run {run_id})."
)
RECONSIDER_TEXT = "Got your new message — reconsidering."
NOTICE_KEY = "harness_notice"
"""`channel_meta` key marking a reply as one of our notices ("failure" or "reconsider")."""

ACKNOWLEDGE_FOR_S = 600.0
"""How long a fading acknowledgement (typing) is kept alive for one message at most."""
DELIVERY_TTL_S = 7 * 86_400
_TURN_OVER = frozenset({"completed", "failed", "cancelled", "steered"})
_BEST_EFFORT = frozenset({ACKNOWLEDGE, RECONSIDER_NOTICE})
"""Functions whose failure the user never hears about: they are cosmetic."""


def channel_or_none(name: str) -> Channel | None:
    """The registered, configured channel called `name`, or None (logged at debug level for an
    unknown channel, at warning level for a misconfigured one). Never raises."""
    try:
        return get_channel(name)
    except UnknownChannelError:
        log.debug("no channel %r registered; nothing to do on the platform side", name)
    except ConfigurationError as exc:
        log.warning("channel %r is not usable: %s", name, exc)
    return None


# -- acknowledge-message ------------------------------------------------------------------


@function(id=ACKNOWLEDGE, trigger=event(MESSAGE_RECEIVED), retries=0)
def acknowledge_message(ctx: Context) -> dict[str, Any]:
    """Show the user their message arrived; on a channel whose acknowledgement fades
    (`RefreshingChannel`), repeat it every `acknowledge_every` seconds until the agent's run
    for this message has replied or ended, for at most `ACKNOWLEDGE_FOR_S`. Best effort."""
    data = MessageReceived.model_validate(ctx.event.data)
    channel = channel_or_none(data.channel)
    if channel is None:
        return {"acknowledged": False}
    ctx.step.run("acknowledge", _acknowledge, data.channel, data.destination, data.channel_meta)
    if not isinstance(channel, RefreshingChannel):
        return {"acknowledged": True, "refreshes": 0}
    agent_run = run_id_for(HANDLE_MESSAGE, ctx.event.id)
    every = channel.acknowledge_every
    refreshes = 0
    for _ in range(int(ACKNOWLEDGE_FOR_S // every)):
        reply = ctx.step.wait_for_event(
            "reply", event=REPLY_READY, match="data.destination.chat_id", timeout=every
        )
        if reply is not None and reply.data.get("run_id") == agent_run:
            break
        # Another turn's reply in this chat, or none yet: refresh while our turn is live. The
        # ledger also covers a reply published before this run first waited.
        if not ctx.step.run(
            "refresh",
            _refresh,
            ctx.runtime,
            agent_run,
            data.channel,
            data.destination,
            data.channel_meta,
        ):
            break
        refreshes += 1
    return {"acknowledged": True, "refreshes": refreshes}


def _acknowledge(name: str, destination: Destination, meta: Mapping[str, Any]) -> None:
    channel = channel_or_none(name)
    if channel is not None:
        channel.acknowledge(destination, meta)


def _refresh(
    runtime: Runtime, agent_run: str, name: str, destination: Destination, meta: Mapping[str, Any]
) -> bool:
    """Acknowledge again if the agent's run is still live; False when the turn is over."""
    record = runtime.ledger.run(agent_run)
    if record is None or record.get("status") in _TURN_OVER:
        return False
    _acknowledge(name, destination, meta)
    return True


# -- send-reply ---------------------------------------------------------------------------


class DeliveryLog:
    """Which chunks of a reply are already on the platform: a Redis hash per reply event,
    chunk index -> platform message id, kept for a week. Written right after each post, so a
    retry of `send-reply` skips what an earlier attempt posted."""

    def __init__(self, runtime: Runtime, reply_id: str) -> None:
        self._redis = runtime.redis
        self.key = f"{runtime.keys.prefix}:reply:{reply_id}:chunks"

    def posted(self) -> dict[int, str]:
        """Chunk index -> platform message id, for every chunk posted so far."""
        raw = self._redis.hgetall(self.key)
        return {int(index): str(message_id) for index, message_id in raw.items()}

    def record(self, index: int, message_id: str) -> None:
        """Remember that chunk `index` was posted as `message_id`."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.hset(self.key, str(index), message_id)
        pipe.expire(self.key, DELIVERY_TTL_S)
        pipe.execute()


@function(id=SEND_REPLY, trigger=event(REPLY_READY), retries=3)
def send_reply(ctx: Context) -> dict[str, Any]:
    """Post `agent.reply.ready` on its channel, then mark the turn complete (Slack: :eyes: ->
    :white_check_mark:). Idempotent per reply: every chunk is posted at most once across
    retries (see `DeliveryLog`); transient platform errors are retried with backoff, permanent
    ones (`PermanentPlatformError`) fail the run at once. Returns the posted message ids."""
    data = ReplyReady.model_validate(ctx.event.data)
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


# -- notices ------------------------------------------------------------------------------


class _Target(BaseModel):
    """Where a notice goes: the chat of the message (or reply) a failed run was about."""

    channel: str
    destination: Destination
    channel_meta: dict[str, Any] = Field(default_factory=dict)


def notice_target(raw_event: Mapping[str, Any]) -> _Target | None:
    """The chat a run's triggering event was about: an `agent.message.received`, an
    `agent.reply.ready` that is not itself a notice, or any event whose data carries a
    `reply` target (a sub-agent's). None otherwise. Never raises."""
    name, data = raw_event.get("name"), raw_event.get("data")
    if not isinstance(data, Mapping):
        return None
    try:
        if name == MESSAGE_RECEIVED:
            message = MessageReceived.model_validate(data)
            return _Target(
                channel=message.channel,
                destination=message.destination,
                channel_meta=message.channel_meta,
            )
        if name == REPLY_READY:
            target = _Target.model_validate(data)
            return None if NOTICE_KEY in target.channel_meta else target
        if isinstance(data.get("reply"), Mapping):
            return _Target.model_validate(data["reply"])
    except ValidationError:
        return None
    return None


def _notice(ctx: Context, target: _Target, text: str, kind: str, run_id: str) -> str:
    reply = ReplyReady(
        response=text,
        channel=target.channel,
        destination=target.destination,
        channel_meta={**target.channel_meta, NOTICE_KEY: kind},
        run_id=run_id,
    )
    # The event id derives from this run and step: a retry or replay never sends it twice.
    return ctx.step.send_event(
        "notify", Event(name=REPLY_READY, data=reply.model_dump(mode="json"))
    )


@function(id=FAILURE_HANDLER, trigger=event(FUNCTION_FAILED), retries=1)
def tell_user_about_failure(ctx: Context) -> dict[str, Any]:
    """When a run about a chat spent its retries, tell that chat once, briefly, with the run id
    and never the error. Failures of cosmetic functions, and of delivering a notice, are only
    logged (by the runtime)."""
    failed = FunctionFailed.model_validate(ctx.event.data)
    target = None if failed.function_id in _BEST_EFFORT else notice_target(failed.event)
    if target is None:
        return {"notified": False}
    text = FAILURE_TEXT.format(run_id=failed.run_id)
    return {"notified": True, "event_id": _notice(ctx, target, text, "failure", failed.run_id)}


@function(
    id=RECONSIDER_NOTICE,
    trigger=event(FUNCTION_CANCELLED, if_=f"event.data.function_id == '{HANDLE_MESSAGE}'"),
    retries=1,
)
def reconsider_notice(ctx: Context) -> dict[str, Any]:
    """In cancel mode (`ON_NEW_MESSAGE=cancel`), tell the chat once that the agent dropped its
    work to start over with the newer message. A run cancelled for another reason (from the
    command line) gets no notice."""
    cancelled = FunctionCancelled.model_validate(ctx.event.data)
    if not ctx.step.run("superseded", _superseded, ctx.runtime, cancelled.reason):
        return {"notified": False}
    target = notice_target(cancelled.event)
    if target is None:
        return {"notified": False}
    event_id = _notice(ctx, target, RECONSIDER_TEXT, "reconsider", cancelled.run_id)
    return {"notified": True, "event_id": event_id}


def _superseded(runtime: Runtime, reason: str) -> bool:
    """True when a cancel `reason` names a newer run of the agent (what cancel mode writes)."""
    record = runtime.ledger.run(reason) if reason else None
    return record is not None and record.get("function_id") == HANDLE_MESSAGE


FUNCTIONS = (acknowledge_message, send_reply, tell_user_about_failure, reconsider_notice)
"""Every function this module declares, for tests that register them on their own registry."""
