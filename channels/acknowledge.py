"""Showing a person their message arrived: typing on Telegram, :eyes: on Slack.

The agent's turn asks for it (`harness.agent.arrival`, through `ChannelPlatforms.acknowledge`)
once it knows the sender is served; the process's keeper (`channels.keeper`) makes the platform
call off the turn's thread and, on a channel whose acknowledgement fades
(`RefreshingChannel`), repeats it every `acknowledge_every` seconds while the agent's run is
live in the ledger (not completed, failed, cancelled or steered), for at most
`ACKNOWLEDGE_FOR_S`, skipping a repeat that would come later than one lasts
(`acknowledge_lasts`). Best effort: a failure is logged, never told to the user, and never
fails the turn. The replies delivery gave up on go out again as the turn's first step
(`harness.records.redelivery`), no longer here.

`acknowledge-message` was the run that did this for every message; it stays registered,
triggered by nothing, so that a run of it parked before an upgrade finishes at its next wake.
"""

from __future__ import annotations

from typing import Any

from channels.base import Channel, refreshing
from channels.keeper import AcknowledgementKeeper
from harness.events import APPROVAL_ANSWERED, ReplyTarget
from harness.runtime import Context, Runtime, event, function
from harness.runtime.functions import INVOKE_EVENT

ACKNOWLEDGE = "acknowledge-message"
ACKNOWLEDGE_FOR_S = 600.0
"""How long a fading acknowledgement (typing) is kept alive for one turn at most."""
TURN_OVER = frozenset({"completed", "failed", "cancelled", "steered"})
"""Run statuses after which a turn shows no more typing."""


def acknowledge(
    keeper: AcknowledgementKeeper,
    channel: Channel,
    runtime: Runtime,
    run_id: str,
    reply: ReplyTarget,
    *,
    keep_alive: bool,
) -> None:
    """Have `keeper` show on `channel` that the message `reply` answers arrived; with
    `keep_alive`, on a `RefreshingChannel`, repeated while run `run_id` is live on `runtime`
    (one repeat per run in this process, however often it is asked). Never raises."""
    meta = reply.channel_meta.platform
    every = lasts = None
    if refreshing(channel):
        every, lasts = channel.acknowledge_every, channel.acknowledge_lasts
    keeper.keep(
        run_id,
        lambda: channel.acknowledge(reply.destination, meta),
        every=every if keep_alive else None,
        live=lambda: run_is_live(runtime, run_id),
        for_s=ACKNOWLEDGE_FOR_S,
        lasts=lasts,
    )


def run_is_live(runtime: Runtime, run_id: str) -> bool:
    """Whether run `run_id` is still at work on its answer: not over (see `TURN_OVER`) and not
    waiting for a person's approval (`agent.approval.answered`), when typing would say the
    agent writes while it waits for them. A run parked on its offloaded model call, a retry's
    backoff or a sub-agent is at work. Its status and awaited event alone, read every few
    seconds per live turn. Raises `BusUnavailableError` when Redis fails."""
    (found,) = runtime.run_index.statuses([run_id])
    if found is None:
        return False
    status, waits_for = found
    return status not in TURN_OVER and not (status == "waiting" and waits_for == APPROVAL_ANSWERED)


@function(id=ACKNOWLEDGE, trigger=event(INVOKE_EVENT), retries=0)
def acknowledge_message(ctx: Context) -> dict[str, Any]:
    """Retired: triggered by nothing (an invocation by id, which nothing makes). A run of it
    parked before the upgrade, waiting for its turn's reply, finishes here when it wakes; its
    turn's typing is the turn's own now."""
    return {"acknowledged": False, "retired": True}
