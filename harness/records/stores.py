"""Every record store in one bundle: what a caller outside the engine holds instead of a Redis
client. `redis_records` builds the Redis implementations on a runtime's client and key names
(what the fleet runs on); `memory_records` builds their in-memory twins (what fast unit tests
run on, with no Redis at all). Code that takes a `Records` cannot tell the two apart."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.records.approvals import ApprovalStore, MemoryApprovalStore, RedisApprovalStore
from harness.records.cursors import Cursors, MemoryCursors, RedisCursors
from harness.records.deliveries import DeliveryRecords, MemoryDeliveryRecords, RedisDeliveryRecords
from harness.records.drafts import DraftRecords, MemoryDraftRecords, RedisDraftRecords
from harness.records.pairing import AccessStore, MemoryAccessStore, RedisAccessStore
from harness.records.rate import MemoryRateWindows, RateWindows, rate_windows
from harness.records.spend import MemorySpendStore, SpendStore, spend_store
from harness.records.undelivered import (
    MemoryUndeliveredReplies,
    RedisUndeliveredReplies,
    UndeliveredReplies,
)
from harness.records.usage import MemoryUsageStore, UsageStore, usage_store
from harness.runtime.instance import Runtime


@dataclass(frozen=True)
class Records:
    """One implementation of every record store. Each field is its store's protocol: see
    that store's module for the contract (and for which errors the Redis one raises)."""

    approvals: ApprovalStore
    pairing: AccessStore
    deliveries: DeliveryRecords
    drafts: DraftRecords
    undelivered: UndeliveredReplies
    cursors: Cursors
    usage: UsageStore
    spend: SpendStore
    rates: RateWindows


def redis_records(runtime: Runtime) -> Records:
    """The Redis implementations, on `runtime`'s client, key names and clock. Touches no
    network (scripts are registered, not loaded), so it is cheap to call per use."""
    return Records(
        approvals=RedisApprovalStore(runtime),
        pairing=RedisAccessStore(runtime),
        deliveries=RedisDeliveryRecords(runtime.redis, runtime.keys),
        drafts=redis_drafts(runtime),
        undelivered=RedisUndeliveredReplies(runtime.redis, runtime.keys),
        cursors=RedisCursors(runtime.redis, runtime.keys),
        usage=usage_store(runtime),
        spend=spend_store(runtime),
        rates=rate_windows(runtime),
    )


def redis_drafts(runtime: Runtime) -> DraftRecords:
    """`redis_records(runtime).drafts` alone: for a caller that needs only the drafts (the
    model gateway, per call it streams), without registering every store's scripts."""
    return RedisDraftRecords(runtime.redis, runtime.keys)


def memory_records(
    clock: Callable[[], float] = time.time,
    run_status: Callable[[str], str | None] = lambda run_id: "running",
) -> Records:
    """Fresh in-memory twins, empty, for tests: one process, nothing expires by age except
    pairing codes (by `clock`, seconds since the epoch). `run_status` answers a run's status
    where the approval store asks whether the run of a request has ended (None: no such run);
    the approval store answers who is allowed from this bundle's pairing store."""
    pairing = MemoryAccessStore(clock)
    return Records(
        approvals=MemoryApprovalStore(run_status, pairing, clock),
        pairing=pairing,
        deliveries=MemoryDeliveryRecords(),
        drafts=MemoryDraftRecords(),
        undelivered=MemoryUndeliveredReplies(),
        cursors=MemoryCursors(),
        usage=MemoryUsageStore(),
        spend=MemorySpendStore(),
        rates=MemoryRateWindows(),
    )
