"""The DM policy gate and the pairing store: strangers get one code; approvals serve them."""

from __future__ import annotations

import pytest

from harness.access import admit, may_serve
from harness.addresses import Asker, ChannelMeta
from harness.records.pairing import CODE_ALPHABET, CODE_TTL_S, RedisAccessStore
from harness.records.stores import memory_records
from harness.runtime import Runtime
from tests.runtime_fixtures import ManualClock

STRANGER = Asker(
    subjects=["telegram:chat:42", "telegram:user:42"],
    pairing_subject="telegram:user:42",
    label="Eve",
)


def test_access_owner_entry_points_are_always_served(runtime: Runtime) -> None:
    # Given a message with no access description (harness chat, the API)
    # When the strictest policy is applied
    verdict = admit(runtime, "allowlist", "cli", ChannelMeta.model_validate({}).asker)
    # Then it is served
    assert verdict.serve


def test_access_a_stranger_gets_one_code_and_is_not_served(runtime: Runtime) -> None:
    first = admit(runtime, "pairing", "telegram", STRANGER)
    again = admit(runtime, "pairing", "telegram", STRANGER)
    assert not first.serve and first.code is not None
    assert len(first.code) == 6 and set(first.code) <= set(CODE_ALPHABET)
    assert not again.serve and again.code is None, "a second message must not get a new code"


def test_access_approving_the_code_serves_the_stranger_from_then_on(runtime: Runtime) -> None:
    code = admit(runtime, "pairing", "telegram", STRANGER).code
    assert code is not None
    request = RedisAccessStore(runtime).approve(code.lower())  # typed by hand, any case
    assert request is not None and request.subject == "telegram:user:42"
    assert admit(runtime, "pairing", "telegram", STRANGER).serve


def test_access_a_code_is_used_once(runtime: Runtime) -> None:
    code = admit(runtime, "pairing", "telegram", STRANGER).code
    assert code is not None
    store = RedisAccessStore(runtime)
    assert store.approve(code) is not None
    assert store.approve(code) is None
    assert store.deny(code) is None


def test_access_a_wrong_code_approves_nobody(runtime: Runtime) -> None:
    admit(runtime, "pairing", "telegram", STRANGER)
    assert RedisAccessStore(runtime).approve("ZZZZZZ") is None
    assert not admit(runtime, "pairing", "telegram", STRANGER).serve


def test_access_an_expired_code_does_nothing_and_a_new_one_is_sent(
    runtime: Runtime, clock: ManualClock
) -> None:
    code = admit(runtime, "pairing", "telegram", STRANGER).code
    assert code is not None
    clock.advance(CODE_TTL_S + 1)
    store = RedisAccessStore(runtime)
    assert store.pending() == []
    assert store.approve(code) is None
    renewed = admit(runtime, "pairing", "telegram", STRANGER)
    assert renewed.code is not None and renewed.code != code


def test_access_denied_strangers_get_no_more_codes(runtime: Runtime) -> None:
    code = admit(runtime, "pairing", "telegram", STRANGER).code
    assert code is not None
    assert RedisAccessStore(runtime).deny(code) is not None
    verdict = admit(runtime, "pairing", "telegram", STRANGER)
    assert not verdict.serve and verdict.code is None


def test_access_revoke_forgets_an_approval(runtime: Runtime) -> None:
    store = RedisAccessStore(runtime)
    store.grant("telegram:user:42", "Eve", "test")
    assert admit(runtime, "pairing", "telegram", STRANGER).serve
    assert store.revoke("telegram:user:42")
    assert not admit(runtime, "pairing", "telegram", STRANGER).serve


def test_access_approving_a_group_serves_its_other_members(runtime: Runtime) -> None:
    RedisAccessStore(runtime).grant("telegram:chat:-100", "the team", "test")
    member = Asker(
        subjects=["telegram:chat:-100", "telegram:user:7"], pairing_subject="telegram:chat:-100"
    )
    assert admit(runtime, "pairing", "telegram", member).serve


@pytest.mark.parametrize(("policy", "served"), [("open", True), ("allowlist", False)])
def test_access_open_serves_everyone_and_allowlist_serves_no_stranger(
    runtime: Runtime, policy: str, served: bool
) -> None:
    verdict = admit(runtime, policy, "telegram", STRANGER)  # type: ignore[arg-type]
    assert verdict.serve is served
    assert verdict.code is None, "no policy but pairing hands out codes"


def test_access_allowlisted_senders_are_served_under_every_policy(runtime: Runtime) -> None:
    listed = STRANGER.model_copy(update={"allowlisted": True})
    for policy in ("pairing", "allowlist", "open"):
        assert admit(runtime, policy, "telegram", listed).serve  # type: ignore[arg-type]


def test_access_a_malformed_description_is_not_served(runtime: Runtime) -> None:
    asker = ChannelMeta.model_validate({"access": {"subjects": "not-a-list"}}).asker
    assert asker is not None
    assert not admit(runtime, "pairing", "telegram", asker).serve


def test_access_open_policy_is_announced_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    from harness.access import announce_policy

    with caplog.at_level("INFO", logger="harness.access"):
        announce_policy("open")
        announce_policy("pairing")
    levels = [(r.levelname, "ANYONE" in r.getMessage()) for r in caplog.records]
    assert levels == [("WARNING", True), ("INFO", False)]


def test_access_pairing_works_on_the_in_memory_records(unreachable_runtime: Runtime) -> None:
    # Given the in-memory records, beside a runtime whose Redis is unreachable
    records = memory_records()
    # When a stranger writes, the owner approves the code, and the stranger writes again
    first = admit(unreachable_runtime, "pairing", "telegram", STRANGER, records)
    assert first.code is not None and not first.serve
    assert records.pairing.approve(first.code) is not None
    again = admit(unreachable_runtime, "pairing", "telegram", STRANGER, records)
    # Then the stranger is served, with no Redis involved
    assert again.serve and again.reason == "paired", again


def test_access_may_serve_reads_the_in_memory_records(unreachable_runtime: Runtime) -> None:
    # Given the in-memory records in which the owner approved the stranger
    records = memory_records()
    records.pairing.grant("telegram:user:42", "Eve", "test")
    # When the typing indicator asks whether to show itself
    # Then it may, with no Redis involved
    assert may_serve(unreachable_runtime, "pairing", STRANGER, records)
