"""Notices to the user about their turn: "Sorry - something went wrong" when a run about a chat
spent its retries (`global-failure-handler`; with what to fix when a model provider refused
the key, the quota or the model), and "reconsidering" in cancel mode
(`reconsider-notice`).

Both are published as `agent.reply.ready` with `channel_meta.harness_notice` set, so delivery
retries and deduplicates them like any reply. The agent's turn is recognised by its function
id from the message contract (`harness.events.MESSAGE_HANDLER`), never by importing the agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from channels.acknowledge import ACKNOWLEDGE
from harness.events import (
    FUNCTION_CANCELLED,
    FUNCTION_FAILED,
    MESSAGE_HANDLER,
    MESSAGE_RECEIVED,
    REPLY_READY,
    FunctionCancelled,
    FunctionFailed,
    MessageReceived,
    ReplyReady,
    ReplyTarget,
)
from harness.llm.errors import failure_reason
from harness.records.stores import redis_records
from harness.runtime import Context, Runtime, event, function

FAILURE_HANDLER = "global-failure-handler"
RECONSIDER_NOTICE = "reconsider-notice"

FAILURE_TEXT = (
    "Sorry — something went wrong while I was working on that. The error was logged (run {run_id})."
)
REFUSED_TEXT = "Sorry — I could not work on that: {reason}. (run {run_id})"
"""The failure notice when the failure is one a person can fix (`failure_reason`)."""
RECONSIDER_TEXT = "Got your new message — reconsidering."
NOTICE_KEY = "harness_notice"
"""`channel_meta` key marking a reply as one of our notices ("failure" or "reconsider")."""
_BEST_EFFORT = frozenset({ACKNOWLEDGE, RECONSIDER_NOTICE})
"""Functions whose failure the user never hears about: they are cosmetic."""


def notice_target(raw_event: Mapping[str, Any]) -> ReplyTarget | None:
    """The chat a run's triggering event was about: an `agent.message.received`, an
    `agent.reply.ready` that is not itself a notice, or any event whose data carries a
    `reply` target (a sub-agent's). None otherwise. Never raises."""
    name, data = raw_event.get("name"), raw_event.get("data")
    if not isinstance(data, Mapping):
        return None
    try:
        if name == MESSAGE_RECEIVED:
            message = MessageReceived.model_validate(data)
            return ReplyTarget(
                channel=message.channel,
                destination=message.destination,
                channel_meta=message.channel_meta,
            )
        if name == REPLY_READY:
            target = ReplyTarget.model_validate(data)
            return None if NOTICE_KEY in target.channel_meta.platform else target
        if isinstance(data.get("reply"), Mapping):
            return ReplyTarget.model_validate(data["reply"])
    except ValidationError:
        return None
    return None


def _notice(ctx: Context, target: ReplyTarget, text: str, kind: str, run_id: str) -> str:
    reply = ReplyReady(
        response=text,
        channel=target.channel,
        destination=target.destination,
        channel_meta=target.channel_meta.plus({NOTICE_KEY: kind}),
        run_id=run_id,
    )
    # The event id derives from this run and step: a retry or replay never sends it twice.
    return ctx.step.send_event("notify", reply.to_event())


@function(id=FAILURE_HANDLER, trigger=event(FUNCTION_FAILED), retries=1)
def tell_user_about_failure(ctx: Context) -> dict[str, Any]:
    """When a run about a chat spent its retries, tell that chat once, briefly, with the run id
    and never the error: only its reason, when it is one a person can fix (a refused model
    key, a spent quota, an unknown model: `failure_reason`, fixed words and names). Failures
    of cosmetic functions, and of delivering a notice, are only logged (by the runtime)."""
    failed = FunctionFailed.from_event(ctx.event)
    target = None if failed.function_id in _BEST_EFFORT else notice_target(failed.event)
    if target is None or ctx.step.run("undelivered", _undelivered, ctx.runtime, failed.run_id):
        return {"notified": False}
    reason = failure_reason(failed.error)
    template = REFUSED_TEXT if reason else FAILURE_TEXT
    text = template.format(run_id=failed.run_id, reason=reason)
    return {"notified": True, "event_id": _notice(ctx, target, text, "failure", failed.run_id)}


@function(
    id=RECONSIDER_NOTICE,
    trigger=event(FUNCTION_CANCELLED, if_=f"event.data.function_id == '{MESSAGE_HANDLER}'"),
    retries=1,
)
def reconsider_notice(ctx: Context) -> dict[str, Any]:
    """In cancel mode (`ON_NEW_MESSAGE=cancel`), tell the chat once that the agent dropped its
    work to start over with the newer message. A run cancelled for another reason (from the
    command line) gets no notice."""
    cancelled = FunctionCancelled.from_event(ctx.event)
    if not ctx.step.run(
        "superseded", _superseded, ctx.runtime, cancelled.reason, cancelled.function_id
    ):
        return {"notified": False}
    target = notice_target(cancelled.event)
    if target is None:
        return {"notified": False}
    event_id = _notice(ctx, target, RECONSIDER_TEXT, "reconsider", cancelled.run_id)
    return {"notified": True, "event_id": event_id}


def _undelivered(runtime: Runtime, run_id: str) -> bool:
    """True when the failed run gave up on a reply that is kept as undelivered: the chat gets
    that reply when the person writes next, not a "Sorry" that would fail the same way."""
    kept = redis_records(runtime).undelivered.all()
    return any(reply.run_id == run_id for reply in kept)


def _superseded(runtime: Runtime, reason: str, function_id: str) -> bool:
    """True when a cancel `reason` names a newer run of the same function: what cancel mode
    writes when the next message of the chat takes over."""
    record = runtime.ledger.run(reason) if reason else None
    return record is not None and record.function_id == function_id
