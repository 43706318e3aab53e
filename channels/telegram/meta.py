"""Telegram's own keys in `channel_meta`: what only this channel writes and reads.

The core reads none of these (it reads `ChannelMeta`'s typed fields: the asker, whether
approvals can be answered, the album); it passes them along unread from a message to its
replies, and from a button press to the approval it settles.
"""

from __future__ import annotations

from harness.addresses import PlatformMeta


class TelegramMeta(PlatformMeta):
    """The chat a message came from (`chat_type`: private, group, supergroup, channel), the
    update that carried it, and for a pressed approval button the callback to answer and the
    request's text to rewrite. Every field is optional: which are set depends on the event."""

    update_id: int | None = None
    chat_type: str | None = None
    chat_title: str | None = None
    has_photo: bool | None = None
    reply_to_message_id: int | None = None
    callback_query_id: str | None = None
    request_text: str | None = None
