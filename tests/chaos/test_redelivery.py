"""Every webhook delivered twice, a third of them three times, some out of order: each message
is published once and answered once, in the order the webhook accepted them."""

from __future__ import annotations

from pathlib import Path

from tests.chaos.fleet import chaos_fleet
from tests.chaos.invariants import assert_invariants
from tests.chaos.load import Plan, send
from tests.chaos.scale import Scale


def test_webhooks_delivered_twice_thrice_and_out_of_order_are_answered_once(
    tmp_path: Path, scale: Scale
) -> None:
    # Given a fleet
    plan = Plan(chats=scale.redeliver_chats, messages=4, redeliver=True, shuffle=True, seed=4)
    with chaos_fleet(tmp_path, scale.workers) as chaos:
        # When every update is posted two or three times, some copies late, some swapped
        outcome = send(chaos.web_url, plan)
        # Then the copies were recognised as duplicates and each message answered once
        report = assert_invariants(chaos, outcome)
    print(f"\nredelivery: {report.figures()}; duplicate deliveries refused {outcome.duplicates}")
    assert report.accepted == plan.chats * plan.messages
    assert outcome.duplicates >= report.accepted, "every message was posted at least twice"
