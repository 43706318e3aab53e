"""The pairing store: a code is spent by its first answer, an expired code grants nothing.
Every test runs on the Redis store and on its in-memory twin (`stores`)."""

from __future__ import annotations

from harness.records.pairing import CODE_TTL_S
from tests.records.conftest import Stores

EVE = "telegram:user:42"


def test_pairing_a_subject_keeps_one_code_until_it_expires(stores: Stores) -> None:
    # Given a stranger who asked for a code
    first, new = stores.access.request(EVE, "Eve", "telegram")
    # When they ask again within the hour, and again after it
    again, again_new = stores.access.request(EVE, "Eve", "telegram")
    stores.clock.advance(CODE_TTL_S + 1)
    later, later_new = stores.access.request(EVE, "Eve", "telegram")
    # Then the second ask got the same code, the third a fresh one
    assert new and not again_new and again == first
    assert later_new and later.code != first.code
    assert [r.code for r in stores.access.pending()] == [later.code]


def test_pairing_a_code_is_spent_by_its_first_answer(stores: Stores) -> None:
    # Given a pending code
    request, _ = stores.access.request(EVE, "Eve", "telegram")
    # When the owner approves it (typed in lower case), then denies it
    approved = stores.access.approve(f" {request.code.lower()} ")
    denied = stores.access.deny(request.code)
    # Then the approval counted, the denial found no code, and Eve is allowed
    assert approved == request and denied is None
    assert stores.access.allowed(["telegram:chat:42", EVE])
    assert not stores.access.denied(EVE)
    assert [(g.subject, g.via) for g in stores.access.approved()] == [(EVE, f"code {request.code}")]


def test_pairing_an_expired_code_grants_nothing(stores: Stores) -> None:
    # Given a code the owner answers too late
    request, _ = stores.access.request(EVE, "Eve", "telegram")
    stores.clock.advance(CODE_TTL_S + 1)
    # Then approving it does nothing
    assert stores.access.approve(request.code) is None
    assert not stores.access.allowed([EVE])


def test_pairing_deny_then_revoke_then_grant(stores: Stores) -> None:
    # Given a denied stranger
    request, _ = stores.access.request(EVE, "Eve", "telegram")
    assert stores.access.deny(request.code) == request
    assert stores.access.denied(EVE) and not stores.access.allowed([EVE])
    # When the owner revokes the denial, then grants Eve by name
    assert stores.access.revoke(EVE)
    assert not stores.access.revoke(EVE), "a second revoke finds nothing"
    stores.access.grant(EVE, "Eve", "owner")
    # Then she is allowed and no longer denied
    assert stores.access.allowed([EVE]) and not stores.access.denied(EVE)
    assert not stores.access.allowed([])
