"""Delivery and draft records. Every contract test runs on the Redis store and on its
in-memory twin (`stores`); the expiry tests are the Redis store's own."""

from __future__ import annotations

from harness.records.deliveries import RedisDeliveryRecords
from harness.records.drafts import DraftRecord, RedisDraftRecords
from harness.runtime import Runtime
from tests.records.conftest import Stores


def test_deliveries_read_back_each_posted_chunk(stores: Stores) -> None:
    # Given two chunks of a reply posted, one recorded twice
    stores.deliveries.record("reply-1", 0, "m-100")
    stores.deliveries.record("reply-1", 1, "m-101")
    stores.deliveries.record("reply-1", 1, "m-101")
    # Then both read back, and another reply has none
    assert stores.deliveries.posted("reply-1") == {0: "m-100", 1: "m-101"}
    assert stores.deliveries.posted("reply-2") == {}


def test_deliveries_begin_tells_a_retry_that_an_attempt_started(stores: Stores) -> None:
    # When two attempts at the same reply begin
    first, second = stores.deliveries.begin("reply-1"), stores.deliveries.begin("reply-1")
    # Then only the second learns an earlier one started
    assert (first, second) == (False, True)


def test_drafts_keep_the_message_and_the_hold_apart(stores: Stores) -> None:
    # Given a run with no draft yet
    assert stores.drafts.get("run-1") == DraftRecord()
    # When its draft is posted, then held by the platform
    stores.drafts.record_message("run-1", "m-7")
    stores.drafts.hold_until("run-1", 1_800_000_000_500)
    # Then both read back as what they are, and no delivery record was written
    assert stores.drafts.get("run-1") == DraftRecord("m-7", 1_800_000_000_500)
    assert stores.deliveries.posted("draft:run-1") == {}


def test_delivery_records_expire_within_a_week(runtime: Runtime) -> None:
    # Given a recorded chunk of a reply
    RedisDeliveryRecords(runtime.redis, runtime.keys).record("reply-1", 0, "m-100")
    # Then its record expires
    assert 0 < runtime.redis.ttl(runtime.keys.reply_chunks("reply-1")) <= 7 * 86_400


def test_draft_record_expires_within_a_week(runtime: Runtime) -> None:
    # Given a recorded draft
    RedisDraftRecords(runtime.redis, runtime.keys).record_message("run-1", "m-7")
    # Then its record expires
    assert 0 < runtime.redis.ttl(runtime.keys.draft("run-1")) <= 7 * 86_400
