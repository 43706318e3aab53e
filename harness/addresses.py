"""Who wrote and where answers go: the addressing parts of the built-in events.

`Sender` and `Destination` are what every platform has. `ChannelMeta` is what a channel adds
about a message: the few things the core reads are typed fields (who is asking, for the
`DM_POLICY` gate and the approvers; whether a person can answer an approval there; the album
a message belongs to), and everything else is the platform's own (`platform`: read only by
that channel, through its typed model in `channels/<platform>/meta.py`).

The wire form did not change when the fields were typed: `channel_meta` is still one flat JSON
object, the typed fields under the keys the fleet has always written (`access`, `approvals`,
`media_group_id`), so events and runs recorded before, and workers of either version in a
fleet being upgraded, read each other.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
)

log = logging.getLogger(__name__)

ACCESS_META = "access"
"""Wire key of `ChannelMeta.asker`."""
CAN_ANSWER_META = "approvals"
"""Wire key of `ChannelMeta.can_answer`."""
ALBUM_META = "media_group_id"
"""Wire key of `ChannelMeta.album` (Telegram's name for it, kept for the recorded events)."""
GROUP_META = "group"
"""Wire key of `ChannelMeta.group`."""


class Sender(BaseModel):
    """Who wrote a message."""

    id: str
    name: str = ""
    username: str | None = None


class Destination(BaseModel):
    """Where a reply goes: a chat, optionally a message to answer and a thread or topic."""

    chat_id: str
    message_id: str | None = None
    thread_id: str | None = None


class Asker(BaseModel):
    """Who a message is from, as a channel sees it. `subjects` are every identity the message
    speaks for (`telegram:chat:42`, `slack:user:U1`); approving any one serves the message.
    `pairing_subject` is the one a code approves: the user in a direct chat, the chat in a
    group. `allowlisted` is True when a configured allowlist names one of the subjects."""

    subjects: list[str]
    pairing_subject: str
    label: str = ""
    allowlisted: bool = False


STRANGER = Asker(subjects=[], pairing_subject="")
"""What a malformed sender description reads as: someone with no identity, never the owner."""


class ChannelMeta(BaseModel):
    """What a channel says about a message beyond its text, sender and destination.

    `asker` is who is asking (None: the owner's own entry points, `harness chat`, the API);
    `can_answer` is True where a person can answer approval requests (the chat channels,
    `harness chat`); `album` groups the parts of one album (a Telegram media group); `group`
    is True where several people talk (a Telegram group, a Slack channel), so the agent is
    told who wrote each message (`harness.agent.speakers`); absent in events recorded before.
    `platform` holds every other key: the channel's own, which the core passes along unread.
    Validates from, and dumps to, the flat wire object (see the module docstring); a malformed
    `access` reads as `STRANGER` rather than failing the event, as it always did.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    asker: Asker | None = Field(
        default=None,
        validation_alias=ACCESS_META,
        serialization_alias=ACCESS_META,
        exclude_if=lambda value: value is None,
    )
    can_answer: bool = Field(
        default=False,
        validation_alias=CAN_ANSWER_META,
        serialization_alias=CAN_ANSWER_META,
        exclude_if=lambda value: not value,
    )
    album: str | None = Field(
        default=None,
        validation_alias=ALBUM_META,
        serialization_alias=ALBUM_META,
        exclude_if=lambda value: not value,
    )
    group: bool = Field(
        default=False,
        validation_alias=GROUP_META,
        serialization_alias=GROUP_META,
        exclude_if=lambda value: not value,
    )

    @field_validator("asker", mode="wrap")
    @classmethod
    def _malformed_is_a_stranger(cls, raw: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(raw)
        except ValidationError:
            log.warning("a message carried a malformed access description; not serving it")
            return STRANGER

    @classmethod
    def of(
        cls,
        platform: Mapping[str, Any],
        *,
        asker: Asker | None = None,
        can_answer: bool = False,
        album: str | None = None,
        group: bool = False,
    ) -> ChannelMeta:
        """A channel's meta: its own `platform` keys and the typed fields the core reads."""
        return cls.model_validate(dict(platform)).model_copy(
            update={"asker": asker, "can_answer": can_answer, "album": album, "group": group}
        )

    @property
    def platform(self) -> Mapping[str, Any]:
        """The keys no typed field reads: the platform channel's own."""
        return dict(self.model_extra or {})

    def plus(self, keys: Mapping[str, Any]) -> ChannelMeta:
        """A copy with `keys` added (a wire key such as `access` sets its typed field)."""
        return ChannelMeta.model_validate({**self.model_dump(mode="json"), **keys})


class PlatformMeta(BaseModel):
    """Base of a channel's typed view of its own keys in `ChannelMeta.platform` (one model per
    platform, owned by that channel). Every field is optional; unknown keys are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    @classmethod
    def of(cls, channel_meta: Mapping[str, Any]) -> Self:
        """The platform's keys in a channel's meta. A malformed value (an event edited by hand,
        or from another channel) reads as absent rather than raising."""
        try:
            return cls.model_validate(channel_meta)
        except ValidationError:
            return cls()

    def keys(self) -> dict[str, Any]:
        """The wire keys this meta sets (unset fields are left out, as they always were)."""
        return self.model_dump(mode="json", exclude_none=True)


class ReplyTarget(BaseModel, frozen=True):
    """Where a user's answers go: what a sub-agent (or a notice) needs to reply by itself."""

    channel: str
    destination: Destination
    channel_meta: ChannelMeta = Field(default_factory=ChannelMeta)
    session_key: str | None = None
