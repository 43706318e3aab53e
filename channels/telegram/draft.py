"""A Telegram reply drawn while it is written: one message, sent once and edited in place.

Telegram allows about one message per second in a chat and twenty per minute in a group
(edits count), and answers 429 with `retry_after` beyond that. The draft shows the first
message's worth of the Markdown so far, rendered by the same formatter as the final reply,
so unbalanced Markdown mid-stream still gives balanced HTML.

In a private chat the draft is first tried as a `sendMessageDraft` preview (Bot API 9.3+): an
ephemeral, animated preview that is not a message, so the final reply is a plain `sendMessage`
and nothing is edited. A Bot API that refuses it for this bot (an older server, or a bot the
method is not offered to) is remembered by `Previews`, and drafts go back to `sendMessage` +
`editMessageText`.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping
from typing import Any

from channels.errors import (
    DestinationError,
    MessageFormatError,
    MessageRejected,
    PermanentPlatformError,
)
from channels.telegram.api import TelegramApi
from channels.telegram.format import Chunk, to_chunks
from channels.telegram.meta import TelegramMeta
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


def draft_id(key: str) -> int:
    """The `sendMessageDraft` id of the draft kept under `key` (a run's draft record): non-zero,
    within 31 bits, the same on every worker and every retry of the run."""
    digest = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") & 0x7FFFFFFF
    return digest or 1


class Previews:
    """Whether this bot's drafts go as `sendMessageDraft` previews. Thread-safe.

    On until the Bot API refuses the method for good (a `PermanentPlatformError` that is not
    about the chat or the text: an unknown method, a bot the method is not offered to): then
    off for the rest of the process, said once in the log."""

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled
        self._lock = threading.Lock()

    def offered(self, destination: Destination, channel_meta: Mapping[str, Any]) -> bool:
        """True when a draft in `destination` should be tried as a preview: previews are on
        and the chat is private (its `chat_type`, else a positive chat id)."""
        chat_type = TelegramMeta.of(channel_meta).chat_type
        private = chat_type == "private" if chat_type else not destination.chat_id.startswith("-")
        with self._lock:
            return self._enabled and private

    def show(self, api: TelegramApi, draft: int, chunk: Chunk, destination: Destination) -> bool:
        """Show `chunk` as preview `draft`; False (and previews off from now on) when the Bot
        API does not offer them. A chunk refused as HTML goes as plain text. Raises other
        `PlatformError`s (a 429, a network failure)."""
        thread = destination.thread_id
        try:
            try:
                api.send_message_draft(
                    destination.chat_id,
                    draft,
                    chunk.html,
                    parse_mode="HTML",
                    message_thread_id=thread,
                )
            except MessageFormatError:
                api.send_message_draft(
                    destination.chat_id, draft, chunk.plain, message_thread_id=thread
                )
        except (MessageFormatError, DestinationError, MessageRejected):
            raise  # about this chat or this text, not about previews
        except PermanentPlatformError as exc:
            with self._lock:
                self._enabled = False
            log.warning(
                "telegram sendMessageDraft refused (%s); drafts are sent and edited instead",
                exc.description,
            )
            return False
        return True
