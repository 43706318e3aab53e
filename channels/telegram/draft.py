"""A Telegram reply drawn while it is written: one message, sent once and edited in place.

Telegram allows about one message per second in a chat and twenty per minute in a group
(edits count), and answers 429 with `retry_after` beyond that. The draft shows the first
message's worth of the Markdown so far, rendered by the same formatter as the final reply,
so unbalanced Markdown mid-stream still gives balanced HTML. `sendMessageDraft` (private
chats of bots with topics, an ephemeral preview that still needs a `sendMessage`) is not used.
"""

from __future__ import annotations

import logging

from channels.errors import MessageFormatError
from channels.telegram.api import TelegramApi
from channels.telegram.format import Chunk, to_chunks
from harness.events import Destination

log = logging.getLogger(__name__)

GROUP_SLOWDOWN = 3.0
"""Twenty messages a minute in a group, shared with everything else the bot says there."""


def edit_interval(destination: Destination, private_every: float) -> float:
    """Seconds between two edits of a draft: `private_every` in a private chat, three times
    that in a group (negative chat ids)."""
    return private_every * (GROUP_SLOWDOWN if destination.chat_id.startswith("-") else 1.0)


def first_chunk(text: str) -> Chunk | None:
    """The first Telegram message of `text` (Markdown), or None for a blank text."""
    chunks = to_chunks(text)
    return chunks[0] if chunks else None


def post(api: TelegramApi, chunk: Chunk, destination: Destination) -> str:
    """Send `chunk` as a new message replying to the user's; return its id. A chunk refused
    as HTML goes as plain text."""
    target = {
        "reply_to_message_id": destination.message_id,
        "message_thread_id": destination.thread_id,
    }
    try:
        message = api.send_message(destination.chat_id, chunk.html, parse_mode="HTML", **target)
    except MessageFormatError:
        message = api.send_message(destination.chat_id, chunk.plain, **target)
    return str(message["message_id"])


def edit(api: TelegramApi, message_id: str, chunk: Chunk, destination: Destination) -> None:
    """Make message `message_id` show `chunk` (plain text if refused as HTML). Idempotent."""
    try:
        api.edit_message_text(destination.chat_id, message_id, chunk.html, parse_mode="HTML")
    except MessageFormatError as exc:
        log.warning("telegram draft refused as HTML, editing as plain text: %s", exc.description)
        api.edit_message_text(destination.chat_id, message_id, chunk.plain)
