"""The `Records` bundle: its stores answer as one (an approval counts the bundle's pairing),
whether they are the Redis implementations or the in-memory twins."""

from __future__ import annotations

import pytest

from harness.events import ApprovalGiven, Destination
from harness.records.stores import Records, memory_records, redis_records
from harness.runtime import Runtime
from tests.runtime_fixtures import ManualClock

BOB = "telegram:user:8"


@pytest.fixture(params=["redis", "memory"])
def records(request: pytest.FixtureRequest, runtime: Runtime, clock: ManualClock) -> Records:
    """The Redis bundle on fakeredis, then the twins."""
    return redis_records(runtime) if request.param == "redis" else memory_records(clock)


def _press(approval_id: str) -> ApprovalGiven:
    return ApprovalGiven(
        approval_id=approval_id, decision="approve", subject=BOB, channel="telegram",
        destination=Destination(chat_id="-100"),
    )  # fmt: skip


def test_records_approval_counts_a_person_paired_in_the_same_bundle(records: Records) -> None:
    # Given a group request any allowed person may answer, and Bob paired by the owner
    records.approvals.open("a-1", ["telegram:user:7"], others="allowed")
    records.pairing.grant(BOB, "Bob", "test")
    # When Bob presses approve
    claim = records.approvals.answer(_press("a-1"))
    # Then his answer counts: the approvals read the bundle's own pairing store
    assert claim.outcome == "recorded", claim


def test_records_approval_refuses_a_person_nobody_paired(records: Records) -> None:
    # Given the same request, and Bob never paired
    records.approvals.open("a-2", ["telegram:user:7"], others="allowed")
    # When Bob presses approve
    claim = records.approvals.answer(_press("a-2"))
    # Then it does not count
    assert claim.outcome == "forbidden", claim


def test_memory_records_are_fresh_each_time() -> None:
    # Given a cursor saved in one set of twins
    memory_records().cursors.set("telegram", "502")
    # When another set is made
    # Then it starts empty: tests do not leak into each other
    assert memory_records().cursors.get("telegram") is None
