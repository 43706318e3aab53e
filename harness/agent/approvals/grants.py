"""Whose "Allow for this session" counts: grants belong to a person within a session.

A press of "Allow for this session" lets that tool run without asking the person who pressed
it (their user subject, as the channel verified it), in that session, and nobody else: in a
group, another member's call still asks. A turn reads the grants of its asker, the person
whose message started it (`ChannelMeta.asker`). The owner's own entry points
(`harness chat`, `/api/chat`, `harness send`) have no asker: whoever can reach them is the
owner, so their grants are the owner's (`OWNER`).
"""

from __future__ import annotations

from harness.events import ReplyTarget
from harness.records.approvals import Claim

OWNER = "owner"
"""The person of the owner's own entry points; no channel's subject can equal it (they all
contain `:`)."""


def people_of(reply: ReplyTarget | None) -> list[str]:
    """Whose grants count in a turn whose replies go to `reply`: the asker's user subjects,
    or `OWNER` when the turn came from the owner's entry points (or has no chat). Empty for
    an asker with no identity: nobody's grants count then."""
    asker = reply.channel_meta.asker if reply is not None else None
    if asker is None:
        return [OWNER]
    return [s for s in asker.subjects if ":user:" in s]


def grantee_of(reply: ReplyTarget | None, claim: Claim) -> str | None:
    """Who a "session" answer (`claim`, read from the request's record) allows: the person who
    gave it in a chat with an asker, `OWNER` at the owner's entry points; None when the record
    does not say who answered (written before it kept that), so nobody is granted."""
    asker = reply.channel_meta.asker if reply is not None else None
    if asker is None:
        return OWNER
    return claim.subject or None
