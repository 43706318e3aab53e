"""Who the owner is, and where to reach them: the person who answers for the fleet when no
one else can (an unattended turn's approvals, a budget raise, owner-only chat commands).

The owner is `AGENT_OWNER` when set (a person's subject as channels write them:
`telegram:user:42`, `slack:user:U0123`), else the person who paired first (the earliest
approved `…:user:…` subject in the pairing records). The owner's own entry points
(`harness chat`, `harness send`, the API behind `HARNESS_API_KEY`, whose messages carry no
`Asker`) always speak as the owner.

The owner is reached in their direct chat with the bot: on Telegram a person's private chat
has their user id as its chat id; on Slack a message posted to a user id lands in their
direct messages with the app.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from harness.addresses import Asker

if TYPE_CHECKING:  # the store's module loads the Redis client: not for `harness.settings`
    from harness.records.pairing import AccessStore

SUBJECT = re.compile(r"^(?P<channel>[a-z][a-z0-9_-]{0,31}):user:(?P<id>[A-Za-z0-9_.@-]{1,128})$")
"""A person's subject: `<channel>:user:<id>`."""


@dataclass(frozen=True)
class Owner:
    """The owner: their subject, the channel and chat id of their direct chat with the bot,
    a label for people to read, and where the fleet learnt who they are."""

    subject: str
    channel: str
    chat_id: str
    label: str
    source: Literal["setting", "first pairing"]


def parse_owner(value: str) -> Owner:
    """The owner `AGENT_OWNER` names. Raises ValueError, naming the expected form, for a
    value that is not a person's subject."""
    found = SUBJECT.match(value.strip())
    if found is None:
        raise ValueError(
            f"AGENT_OWNER={value!r} is not a person: write it as <channel>:user:<id>, "
            "for example telegram:user:123456789 or slack:user:U0123ABCD"
        )
    return Owner(
        subject=found.group(0),
        channel=found.group("channel"),
        chat_id=found.group("id"),
        label=found.group(0),
        source="setting",
    )


def find_owner(setting: str, store: AccessStore) -> Owner | None:
    """The owner: `setting` (`AGENT_OWNER`, already checked by the settings) when given, else
    the person whose pairing was approved first; None when neither names anyone. Raises on
    Redis errors (callers run it in a durable step or a command)."""
    if setting.strip():
        return parse_owner(setting)
    people = [g for g in store.approved() if SUBJECT.match(g.subject)]
    if not people:
        return None
    first = min(people, key=lambda g: (g.approved_ms, g.subject))
    found = SUBJECT.match(first.subject)
    assert found is not None  # filtered above
    return Owner(
        subject=first.subject,
        channel=found.group("channel"),
        chat_id=found.group("id"),
        label=first.label or first.subject,
        source="first pairing",
    )


def speaks_as_owner(owner: Owner | None, asker: Asker | None) -> bool:
    """True when a message from `asker` comes from the owner: one of the owner's own entry
    points (no `Asker`), or a message whose subjects include the owner's."""
    if asker is None:
        return True
    return owner is not None and owner.subject in asker.subjects
