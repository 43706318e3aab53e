"""`redeliver-undelivered`: when a person writes, the replies of their chat that delivery gave
up on go out first (through `send-reply`, so in order, before the answer to the new message)."""

from __future__ import annotations

from typing import Any

from harness.events import MESSAGE_RECEIVED, MessageReceived
from harness.runtime import Context, event, function
from harness.runtime.redelivery import redeliver_chat

REDELIVER_UNDELIVERED = "redeliver-undelivered"


@function(id=REDELIVER_UNDELIVERED, trigger=event(MESSAGE_RECEIVED), retries=3)
def redeliver_undelivered(ctx: Context) -> dict[str, Any]:
    """Publish a redelivery for every undelivered reply of the message's chat. Idempotent:
    a retry publishes the same event ids, which the bus ignores. Returns their ids."""
    message = MessageReceived.from_event(ctx.event)
    ids = ctx.step.run(
        "redeliver", redeliver_chat, ctx.runtime, message.channel, message.destination.chat_id
    )
    return {"redelivered": ids}
