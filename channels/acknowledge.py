"""`acknowledge-message`: first send again the chat's replies that delivery gave up on, then
show the user their message arrived (typing / :eyes:), refreshed on channels whose
acknowledgement fades until the agent's turn replies or ends.

The redelivery is a step of this run rather than a run of its own, so a turn needs one Celery
task fewer. Best effort: a failure here is logged, never told to the user. The agent's turn is found
by its run id, `run_id_for(MESSAGE_HANDLER, message event id)`, with the handler's function
id taken from the message contract in `harness.events`, so channels never import the agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from channels.base import RefreshingChannel
from channels.registry import channel_or_none
from harness.access import may_serve
from harness.addresses import Asker
from harness.events import (
    MESSAGE_HANDLER,
    MESSAGE_RECEIVED,
    REPLY_READY,
    Destination,
    MessageReceived,
    ReplyReady,
)
from harness.records.redelivery import redeliver_chat
from harness.runtime import Context, Runtime, event, function, run_id_for
from harness.settings import get_settings

ACKNOWLEDGE = "acknowledge-message"
ACKNOWLEDGE_FOR_S = 600.0
"""How long a fading acknowledgement (typing) is kept alive for one message at most."""
_TURN_OVER = frozenset({"completed", "failed", "cancelled", "steered"})


@function(id=ACKNOWLEDGE, trigger=event(MESSAGE_RECEIVED), retries=3)
def acknowledge_message(ctx: Context) -> dict[str, Any]:
    """Publish a redelivery (through `send-reply`, so in order) for every reply of the
    message's chat that delivery gave up on, for every message, whatever its channel or
    sender; then show the user their message arrived and, on a channel whose acknowledgement
    fades (`RefreshingChannel`), repeat it every `acknowledge_every` seconds until the agent's
    run for this message has replied or ended, for at most `ACKNOWLEDGE_FOR_S`.

    The result's `redelivered` lists the redelivery event ids. A retry publishes the same ids,
    which the bus ignores; the acknowledgement itself is best effort."""
    data = MessageReceived.from_event(ctx.event)
    chat_id = data.destination.chat_id
    redelivered = ctx.step.run("redeliver", redeliver_chat, ctx.runtime, data.channel, chat_id)
    channel = channel_or_none(data.channel)
    if channel is None:
        return {"acknowledged": False, "redelivered": redelivered}
    asker = data.channel_meta.asker
    if asker is not None and not ctx.step.run("may-serve", _may_serve, ctx.runtime, asker):
        # a stranger sees nothing but the pairing code
        return {"acknowledged": False, "redelivered": redelivered}
    ctx.step.run(
        "acknowledge", _acknowledge, data.channel, data.destination, data.channel_meta.platform
    )
    if not isinstance(channel, RefreshingChannel):
        return {"acknowledged": True, "refreshes": 0, "redelivered": redelivered}
    # The agent's run for this message: its function id is part of the message contract.
    agent_run = run_id_for(MESSAGE_HANDLER, ctx.event.id)
    every = channel.acknowledge_every
    refreshes = 0
    for _ in range(int(ACKNOWLEDGE_FOR_S // every)):
        reply = ctx.step.wait_for_event(
            "reply", event=REPLY_READY, match="data.destination.chat_id", timeout=every
        )
        if reply is not None and ReplyReady.from_event(reply).run_id == agent_run:
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
            data.channel_meta.platform,
        ):
            break
        refreshes += 1
    return {"acknowledged": True, "refreshes": refreshes, "redelivered": redelivered}


def _may_serve(runtime: Runtime, asker: Asker) -> bool:
    return may_serve(runtime, get_settings().dm_policy, asker)


def _acknowledge(name: str, destination: Destination, meta: Mapping[str, Any]) -> None:
    channel = channel_or_none(name)
    if channel is not None:
        channel.acknowledge(destination, meta)


def _refresh(
    runtime: Runtime, agent_run: str, name: str, destination: Destination, meta: Mapping[str, Any]
) -> bool:
    """Acknowledge again if the agent's run is still live; False when the turn is over."""
    record = runtime.ledger.run(agent_run)
    if record is None or record.status in _TURN_OVER:
        return False
    _acknowledge(name, destination, meta)
    return True
