"""Slack's own keys in `channel_meta`: what only this channel writes and reads.

The core reads none of these (it reads `ChannelMeta`'s typed fields); it passes them along
unread from a message to its replies, and from a button press to the approval it settles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


class SlackMeta(BaseModel):
    """The workspace (`team_id`) and kind of conversation (`channel_type`: im, channel, ...)
    of a message; for a pressed approval button, who pressed it (`user`), the request's text
    to rewrite and its thread. Every field is optional: which are set depends on the event."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    team_id: str | None = None
    channel_type: str | None = None
    user: str | None = None
    request_text: str | None = None
    thread_ts: str | None = None

    @classmethod
    def of(cls, channel_meta: Mapping[str, Any]) -> SlackMeta:
        """Slack's keys in a channel's meta (the platform part). A malformed value reads as
        absent rather than raising."""
        try:
            return cls.model_validate(channel_meta)
        except ValidationError:
            return cls()

    def keys(self) -> dict[str, Any]:
        """The wire keys this meta sets (unset fields are left out)."""
        return self.model_dump(mode="json", exclude_none=True)
