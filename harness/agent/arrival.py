"""What a chat message meets first, in the run that answers it: the chat's replies that
delivery gave up on go out again, then the person sees their message arrived.

The redelivery (`harness.records.redelivery.redeliver_chat`) publishes each undelivered reply
of the chat again, oldest first, through `send-reply`, whose per-chat order puts them before
anything this run answers. It is done for every message, whatever its sender (a stranger's
chat gets its undelivered pairing code again). The acknowledgement (typing, :eyes:) is shown
only to a sender `DM_POLICY` serves, through the chat platforms' seam
(`harness.agent.platforms.ChatPlatforms.acknowledge`): at once, off the turn's thread, and
kept up while the turn's run is live. Both are one durable step, so a replay (the turn resumed
after its model call, maybe in another process) neither publishes nor acknowledges again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from harness.access import may_serve
from harness.agent import platforms
from harness.events import MessageReceived, ReplyTarget
from harness.records.redelivery import redeliver_chat
from harness.runtime import Context
from harness.settings import DmPolicy

log = logging.getLogger(__name__)


def arrive(
    ctx: Context, data: MessageReceived, policy: DmPolicy, *, acknowledge: bool = True
) -> dict[str, Any]:
    """The durable step "arrival" of the run answering `data`: redeliver its chat's
    undelivered replies and, with `acknowledge` and a sender `policy` serves, show the
    message arrived, kept up while this run is live. Returns the step's record:
    `redelivered` (the redelivery event ids; a retry publishes the same ones) and
    `acknowledged`. Raises `BusUnavailableError` (the step is retried) when Redis fails."""

    def arrival() -> dict[str, Any]:
        redelivered = redeliver_chat(ctx.runtime, data.channel, data.destination.chat_id)
        shown = acknowledge and _acknowledged(ctx, data, policy, keep_alive=True)
        return {"redelivered": redelivered, "acknowledged": shown}

    return dict(ctx.step.run("arrival", arrival))


def arrived_meanwhile(
    ctx: Context, messages: Sequence[MessageReceived], policy: DmPolicy
) -> dict[str, Any] | None:
    """For messages handed to a live turn (steering), whose own runs never execute: the
    chat's undelivered replies again and each served message acknowledged once (the turn
    keeps its own acknowledgement up), in the durable step "arrival". None, and no step,
    when there are no messages."""
    if not messages:
        return None

    def arrival() -> dict[str, Any]:
        chats = {(m.channel, m.destination.chat_id): None for m in messages}
        redelivered = [i for c in chats for i in redeliver_chat(ctx.runtime, *c)]
        shown = [_acknowledged(ctx, m, policy, keep_alive=False) for m in messages]
        return {"redelivered": redelivered, "acknowledged": any(shown)}

    return dict(ctx.step.run("arrival", arrival))


def _acknowledged(ctx: Context, data: MessageReceived, policy: DmPolicy, keep_alive: bool) -> bool:
    """Acknowledge `data` on its platform unless its sender is a stranger, who must see
    nothing but the pairing code; False when nothing was shown."""
    chat = platforms.installed()
    if chat is None or not may_serve(ctx.runtime, policy, data.channel_meta.asker):
        return False
    reply = ReplyTarget(
        channel=data.channel,
        destination=data.destination,
        channel_meta=data.channel_meta,
        session_key=data.session_key,
    )
    try:
        return chat.acknowledge(ctx.runtime, ctx.run_id, reply, keep_alive=keep_alive)
    except Exception:  # the seam must not raise; a plug-in's bug must not fail the turn
        log.warning("acknowledging the message failed", exc_info=True)
        return False
