"""`acknowledge-message`: show the user their message arrived (typing / :eyes:), refreshed on
channels whose acknowledgement fades until the agent's turn replies or ends.

Best effort: a failure here is logged, never told to the user.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from channels.base import RefreshingChannel
from channels.registry import channel_or_none
from harness.agent.handlers import HANDLE_MESSAGE
from harness.events import MESSAGE_RECEIVED, REPLY_READY, Destination, MessageReceived, ReplyReady
from harness.runtime import Context, Runtime, event, function, run_id_for

ACKNOWLEDGE = "acknowledge-message"
ACKNOWLEDGE_FOR_S = 600.0
"""How long a fading acknowledgement (typing) is kept alive for one message at most."""
_TURN_OVER = frozenset({"completed", "failed", "cancelled", "steered"})


@function(id=ACKNOWLEDGE, trigger=event(MESSAGE_RECEIVED), retries=0)
def acknowledge_message(ctx: Context) -> dict[str, Any]:
    """Show the user their message arrived; on a channel whose acknowledgement fades
    (`RefreshingChannel`), repeat it every `acknowledge_every` seconds until the agent's run
    for this message has replied or ended, for at most `ACKNOWLEDGE_FOR_S`. Best effort."""
    data = MessageReceived.from_event(ctx.event)
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
    if record is None or record.status in _TURN_OVER:
        return False
    _acknowledge(name, destination, meta)
    return True
