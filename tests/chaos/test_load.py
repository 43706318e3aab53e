"""Many sessions of five messages each, posted as fast as the webhook accepts them."""

from __future__ import annotations

import time
from pathlib import Path

from tests.chaos.fleet import chaos_fleet, elapsed_since
from tests.chaos.invariants import assert_invariants
from tests.chaos.load import Plan, send
from tests.chaos.scale import Scale


def test_sessions_of_five_messages_as_fast_as_the_webhook_accepts_them(
    tmp_path: Path, scale: Scale
) -> None:
    # Given a fleet
    plan = Plan(chats=scale.load_sessions, messages=scale.load_messages, seed=6)
    with chaos_fleet(tmp_path, scale.workers) as chaos:
        started = time.monotonic()
        # When every session posts its messages, 64 requests in flight at most
        outcome = send(chaos.web_url, plan, concurrency=64)
        # Then all are answered once and in order
        report = assert_invariants(chaos, outcome)
        answered_s = elapsed_since(started)
    total = plan.chats * plan.messages
    print(f"\nload {plan.chats} x {plan.messages}: {report.figures()}; accepted in "
          f"{outcome.seconds:.1f} s ({total / outcome.seconds:.0f}/s), all answered in "
          f"{answered_s:.1f} s ({total / answered_s:.1f} turns/s)")  # fmt: skip
    assert report.accepted == total
