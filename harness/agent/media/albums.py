"""Telegram albums as one message.

Telegram delivers the photos of an album (a media group) as separate messages, a moment
apart, sharing a `media_group_id`. With `ON_NEW_MESSAGE=steer` (the default) the first one
starts the turn and the rest are handed to its inbox; the turn waits `ALBUM_WAIT` (a durable
sleep, no worker held) and folds everything that arrived meanwhile into its own message, so the
model sees one message with every photo and the caption, and answers once. In the other modes
each photo is its own message.
"""

from __future__ import annotations

from harness.events import MessageReceived
from harness.runtime.steps import Context

ALBUM_WAIT = 1.5  # seconds; Telegram sends an album's parts well within this


def gather_album(ctx: Context, data: MessageReceived) -> MessageReceived:
    """`data` with the parts of its album (and any message that came with them) folded in:
    texts joined by blank lines, attachments in arrival order. Returns `data` unchanged for a
    message outside an album. Deterministic across replays (a sleep and an inbox step)."""
    if not data.channel_meta.album:
        return data
    ctx.step.sleep("album", ALBUM_WAIT)
    arrived = [MessageReceived.from_event(event) for event in ctx.step.take_inbox("album")]
    if not arrived:
        return data
    texts = [part.message.strip() for part in (data, *arrived) if part.message.strip()]
    attachments = [a for part in (data, *arrived) for a in part.attachments]
    return data.model_copy(update={"message": "\n\n".join(texts), "attachments": attachments})
