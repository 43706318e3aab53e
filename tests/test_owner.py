"""Who the owner is: `AGENT_OWNER`, else the first person paired (`harness.owner`)."""

from __future__ import annotations

import pytest

from harness.addresses import Asker
from harness.owner import find_owner, parse_owner, speaks_as_owner
from harness.records.stores import memory_records


def test_owner_setting_names_a_person_and_their_direct_chat() -> None:
    owner = parse_owner(" telegram:user:42 ")
    assert (owner.subject, owner.channel, owner.chat_id, owner.source) == (
        "telegram:user:42",
        "telegram",
        "42",
        "setting",
    )


@pytest.mark.parametrize("value", ["bob", "telegram:chat:42", "telegram:user:", "x:user:a b"])
def test_owner_setting_that_is_not_a_person_is_refused_with_the_form(value: str) -> None:
    with pytest.raises(ValueError, match="<channel>:user:<id>"):
        parse_owner(value)


def test_owner_is_the_first_person_paired_when_not_set() -> None:
    pairing = memory_records().pairing
    assert find_owner("", pairing) is None
    # A group paired before anyone: groups are never the owner
    pairing.grant("telegram:chat:-100", "a group", via="cli")
    pairing.grant("slack:user:U2", "Ana", via="cli")
    pairing.grant("telegram:user:7", "Bo", via="cli")
    owner = find_owner("", pairing)
    assert owner is not None
    assert (owner.subject, owner.chat_id, owner.label, owner.source) == (
        "slack:user:U2",
        "U2",
        "Ana",
        "first pairing",
    )
    # The setting wins over the pairing records
    chosen = find_owner("telegram:user:7", pairing)
    assert chosen is not None and chosen.source == "setting" and chosen.chat_id == "7"


def test_only_the_owner_and_their_own_entry_points_speak_as_owner() -> None:
    owner = parse_owner("telegram:user:42")
    in_group = Asker(subjects=["telegram:chat:-1", "telegram:user:42"], pairing_subject="x")
    other = Asker(subjects=["telegram:chat:-1", "telegram:user:43"], pairing_subject="x")
    assert speaks_as_owner(owner, None)
    assert speaks_as_owner(owner, in_group)
    assert not speaks_as_owner(owner, other)
    assert not speaks_as_owner(None, other)
