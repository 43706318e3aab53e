"""Who is speaking in a chat: the sender of each user message, as the model sees it.

In a group (`ChannelMeta.group`: a Telegram group, a Slack channel) every user message the
session keeps and the model reads starts with its sender, `[Ana (telegram:123)]: text`: the
display name, then the stable id (`<channel>:<sender id>`, the same person in every chat of
that platform). The name is the person's own text, so it is cleaned (no line breaks, brackets
or parentheses, at most `MAX_NAME_CHARS`) and cannot pose as another sender or close the
prefix early. A private chat's messages are left as they were, so its prompt and transcript
stay byte-identical to what they were before senders were shown.

`remember` notes in a group carry the same label (`ABOUT_EXTRA`), and
`AGENT_MEMORY_SCOPE=per-person` keys memory by `Speaker.id` (`memory.scope`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.addresses import Asker
from harness.events import MESSAGE_RECEIVED, Event, MessageReceived
from harness.llm.types import Message

MAX_NAME_CHARS = 40
"""Longest display name shown; longer names are cut (with an ellipsis)."""
MAX_ID_CHARS = 80
"""Longest stable id shown (ids are the platform's, but the HTTP API lets anyone set one)."""
ABOUT_EXTRA = "about"
"""`ToolContext.extras` key: the label of who a group's `remember` note is about (str)."""
_UNSAFE = re.compile(r"[\[\]()\s]+")


@dataclass(frozen=True)
class Speaker:
    """The sender of a user message: `id` is stable across chats (`telegram:123`), `name`
    the cleaned display name ("" when none), `group` True when others share the chat."""

    id: str
    name: str
    group: bool

    @property
    def label(self) -> str:
        """`Ana (telegram:123)`, or just the id when the sender has no name."""
        return f"{self.name} ({self.id})" if self.name else self.id


def speaker_of(data: MessageReceived) -> Speaker | None:
    """The sender of `data`; None when the channel gave no sender id."""
    sender = _clean(data.sender.id, MAX_ID_CHARS)
    if not sender:
        return None
    stable = f"{_clean(data.channel, MAX_ID_CHARS)}:{sender}"
    return Speaker(stable, _clean(data.sender.name, MAX_NAME_CHARS), data.channel_meta.group)


def event_speaker(event: Event) -> Speaker | None:
    """The sender of a run's event when it is a chat message (else None: a sub-agent's task,
    a cron job). Never raises."""
    if event.name != MESSAGE_RECEIVED:
        return None
    try:
        return speaker_of(MessageReceived.from_event(event))
    except ValueError:  # a malformed message is refused elsewhere; it has no speaker here
        return None


def said_by(data: MessageReceived, message: Message) -> Message:
    """`message` (the text of `data`, with its attachments) as the model reads it: prefixed
    with its sender in a group, unchanged in a private chat (see the module docstring)."""
    speaker = speaker_of(data)
    if speaker is None or not speaker.group:
        return message
    return message.model_copy(update={"text": f"[{speaker.label}]: {message.text}"})


def about(speaker: Speaker | None) -> dict[str, str]:
    """The `ToolContext.extras` entry naming who a note is about: only in a group."""
    return {ABOUT_EXTRA: speaker.label} if speaker is not None and speaker.group else {}


def person_of(data: MessageReceived) -> str | None:
    """Whose message `data` is, for budgets and rate limits: the sender's person subject as
    the channel gave it (`telegram:user:42`, what `AGENT_OWNER` names), else the speaker's
    stable id (`test:u1`); None when the channel said neither (a function's own message)."""
    subject = person_subject(data.channel_meta.asker)
    if subject is not None:
        return subject
    speaker = speaker_of(data)
    return speaker.id if speaker is not None else None


def person_subject(asker: Asker | None) -> str | None:
    """The person subject (`<channel>:user:<id>`) among `asker`'s subjects, None when it has
    none (a group's chat subject alone, or no asker). How a sub-agent knows whose message it
    works for: from the asker its reply target carries."""
    people = [s for s in asker.subjects if ":user:" in s] if asker is not None else []
    return people[0] if people else None


def _clean(text: str, limit: int) -> str:
    """`text` on one line, without brackets or parentheses, at most `limit` characters."""
    flat = _UNSAFE.sub(" ", text).strip()
    return flat if len(flat) <= limit else f"{flat[: limit - 1].rstrip()}…"
