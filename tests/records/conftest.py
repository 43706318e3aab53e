"""Each store's two implementations behind one fixture, so every contract test runs against
the Redis one (on fakeredis, with the runtime's clock) and its in-memory twin."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from harness.records.approvals import ApprovalStore, MemoryApprovalStore, RedisApprovalStore
from harness.records.cursors import Cursors, MemoryCursors, RedisCursors
from harness.records.deliveries import DeliveryRecords, MemoryDeliveryRecords, RedisDeliveryRecords
from harness.records.drafts import DraftRecords, MemoryDraftRecords, RedisDraftRecords
from harness.records.pairing import AccessStore, MemoryAccessStore, RedisAccessStore
from harness.records.undelivered import (
    MemoryUndeliveredReplies,
    RedisUndeliveredReplies,
    UndeliveredReplies,
)
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


def _redis(runtime: Runtime, clock: ManualClock) -> Stores:
    def run_status(run_id: str, status: str) -> None:
        runtime.redis.hset(runtime.keys.run(run_id), "status", status)

    return Stores(
        kind="redis",
        approvals=RedisApprovalStore(runtime),
        access=RedisAccessStore(runtime),
        deliveries=RedisDeliveryRecords(runtime.redis, runtime.keys),
        drafts=RedisDraftRecords(runtime.redis, runtime.keys),
        undelivered=RedisUndeliveredReplies(runtime.redis, runtime.keys),
        cursors=RedisCursors(runtime.redis, runtime.keys),
        run_status=run_status,
        clock=clock,
    )


def _memory(clock: ManualClock) -> Stores:
    runs: dict[str, str] = {}
    access = MemoryAccessStore(clock)
    return Stores(
        kind="memory",
        approvals=MemoryApprovalStore(runs.get, access, clock),
        access=access,
        deliveries=MemoryDeliveryRecords(),
        drafts=MemoryDraftRecords(),
        undelivered=MemoryUndeliveredReplies(),
        cursors=MemoryCursors(),
        run_status=runs.__setitem__,
        clock=clock,
    )


@pytest.fixture(params=["redis", "memory"])
def stores(request: pytest.FixtureRequest, runtime: Runtime, clock: ManualClock) -> Stores:
    """Every store, once on Redis (fakeredis) and once in memory."""
    return _redis(runtime, clock) if request.param == "redis" else _memory(clock)
