"""A reply's delivery log and a run's draft log work on the in-memory twins
(`memory_records()`), beside a runtime whose Redis is a closed port: any Redis command would
fail these tests, so they prove the channels need only their records."""

from __future__ import annotations

from dataclasses import replace

import pytest

from channels.delivery import DeliveryLog
from channels.drafts import DraftLog
from harness.errors import BusUnavailableError
from harness.records.stores import memory_records
from harness.runtime import Runtime
from tests.runtime_fixtures import ManualClock


@pytest.fixture
def offline(unreachable_runtime: Runtime, clock: ManualClock) -> Runtime:
    """A runtime on the manual clock whose Redis is unreachable."""
    return replace(unreachable_runtime, clock=clock)


def test_offline_runtime_fails_on_its_own_records(offline: Runtime) -> None:
    # Given the runtime the tests below use
    # When a log reads the runtime's Redis records (the default)
    # Then it fails: the tests below would too, had they touched Redis
    with pytest.raises(BusUnavailableError):
        DeliveryLog(offline, "reply-1").posted()


def test_delivery_log_on_twins_lets_a_retry_skip_what_was_posted(offline: Runtime) -> None:
    # Given a first attempt that posted two chunks of a reply, recorded in the twins
    records = memory_records()
    first = DeliveryLog(offline, "reply-1", records)
    assert first.begin() is False, "the first attempt has nobody before it"
    first.record(0, "m0")
    first.record(1, "m1")
    # When the delivery is retried
    retry = DeliveryLog(offline, "reply-1", records)
    # Then the retry knows an attempt came before, and which chunks to skip
    assert retry.begin() is True
    assert retry.posted() == {0: "m0", 1: "m1"}
    assert DeliveryLog(offline, "reply-2", records).posted() == {}, "records are per reply"


def test_draft_log_on_twins_keeps_the_message_and_the_platform_pace(
    offline: Runtime, clock: ManualClock
) -> None:
    # Given a run that posted its draft and was told to wait 3 s before the next edit
    records = memory_records()
    writer = DraftLog(offline, "run-1", records)
    assert writer.message_id() is None
    writer.record("m-7")
    writer.hold(3)
    # When, a second later, the final delivery looks the draft up
    clock.advance(1)
    delivery = DraftLog(offline, "run-1", records)
    # Then it finds the message, and waits out only what is left of the pace
    assert delivery.message_id() == "m-7"
    assert delivery.held_for() == 2.0
