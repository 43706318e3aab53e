"""Slack's own keys in `channel_meta`: what only this channel writes and reads.

The core reads none of these (it reads `ChannelMeta`'s typed fields); it passes them along
unread from a message to its replies, and from a button press to the approval it settles.
"""

from __future__ import annotations

from harness.addresses import PlatformMeta


class SlackMeta(PlatformMeta):
    """The workspace (`team_id`) and kind of conversation (`channel_type`: im, channel, ...)
    of a message; for a pressed approval button, who pressed it (`user`), the request's text
    to rewrite and its thread. Every field is optional: which are set depends on the event."""

    team_id: str | None = None
    channel_type: str | None = None
    user: str | None = None
    request_text: str | None = None
    thread_ts: str | None = None
