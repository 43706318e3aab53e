"""Whose "allow for this session" a turn reads and a press writes."""

from __future__ import annotations

from harness.addresses import ACCESS_META
from harness.agent.approvals.grants import OWNER, grantee_of, people_of
from harness.events import Destination, ReplyTarget
from harness.records.approvals import Claim

BOB = "telegram:user:7"


def _reply(**access: object) -> ReplyTarget:
    meta = {ACCESS_META: access} if access else {}
    return ReplyTarget(
        channel="telegram", destination=Destination(chat_id="-100"), channel_meta=meta
    )


def test_people_of_a_group_turn_is_its_asker_not_the_chat() -> None:
    # Given Bob's message in a group (it speaks for the chat and for him)
    reply = _reply(subjects=["telegram:chat:-100", BOB], pairing_subject="telegram:chat:-100")
    # Then only his own grants count in his turn
    assert people_of(reply) == [BOB]


def test_people_of_the_owners_entry_points_is_the_owner() -> None:
    assert people_of(_reply()) == [OWNER]
    assert people_of(None) == [OWNER]


def test_grantee_is_who_answered_in_a_chat_and_the_owner_elsewhere() -> None:
    # Given a "session" answer the record says Bob gave
    claim = Claim(outcome="answered", state="session", by="Bob", subject=BOB)
    chat = _reply(subjects=[BOB], pairing_subject=BOB)
    # Then in a chat the grant is his, at the owner's entry points the owner's
    assert grantee_of(chat, claim) == BOB
    assert grantee_of(_reply(), claim) == OWNER
    # And a record that does not say who answered grants nobody
    assert grantee_of(chat, Claim(outcome="answered", state="session", by="Bob")) is None
