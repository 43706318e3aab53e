"""Each store's two implementations behind one fixture, so every contract test runs against
the Redis one (on fakeredis, with the runtime's clock) and its in-memory twin."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from harness.records.approvals import ApprovalStore
from harness.records.cursors import Cursors
from harness.records.deliveries import DeliveryRecords
from harness.records.drafts import DraftRecords
from harness.records.pairing import AccessStore
from harness.records.stores import Records, memory_records, redis_records
from harness.records.undelivered import UndeliveredReplies
from harness.runtime import Runtime
from tests.runtime_fixtures import ManualClock


@dataclass
class Stores:
    """One implementation of every store, sharing a clock; `run_status` sets a run's status
    where the approval store looks it up."""

    kind: str
    approvals: ApprovalStore
    access: AccessStore
    deliveries: DeliveryRecords
    drafts: DraftRecords
    undelivered: UndeliveredReplies
    cursors: Cursors
    run_status: Callable[[str, str], None]
    clock: ManualClock


def _stores(
    kind: str, records: Records, run_status: Callable[[str, str], None], clock: ManualClock
) -> Stores:
    r = records
    return Stores(
        kind, r.approvals, r.pairing, r.deliveries, r.drafts, r.undelivered, r.cursors,
        run_status, clock,
    )  # fmt: skip


def _redis(runtime: Runtime, clock: ManualClock) -> Stores:
    def run_status(run_id: str, status: str) -> None:
        runtime.redis.hset(runtime.keys.run(run_id), "status", status)

    return _stores("redis", redis_records(runtime), run_status, clock)


def _memory(clock: ManualClock) -> Stores:
    runs: dict[str, str] = {}
    return _stores("memory", memory_records(clock, runs.get), runs.__setitem__, clock)


@pytest.fixture(params=["redis", "memory"])
def stores(request: pytest.FixtureRequest, runtime: Runtime, clock: ManualClock) -> Stores:
    """Every store, once on Redis (fakeredis) and once in memory."""
    return _redis(runtime, clock) if request.param == "redis" else _memory(clock)
