"""The model answers 429 and 500 at random and sometimes hangs past its timeout; Telegram's
sendMessage fails at random: every turn is retried to its one reply, nothing doubled."""

from __future__ import annotations

from pathlib import Path

from tests.chaos.fleet import ModelFaults, chaos_fleet
from tests.chaos.invariants import assert_invariants
from tests.chaos.load import Plan, send
from tests.chaos.scale import Scale


def test_model_and_platform_failing_at_random_still_answer_every_message_once(
    tmp_path: Path, scale: Scale
) -> None:
    # Given a model that fails about one request in eight, and a flaky sendMessage
    faults = ModelFaults(rate_limited=0.06, server_error=0.05, hang=0.02, seed=5)
    plan = Plan(chats=scale.fault_chats, messages=3, seed=5)
    with chaos_fleet(tmp_path, scale.workers, faults) as chaos:
        chaos.telegram.fail_at_random(0.1, status=500, seed=5)
        # When the conversations are sent
        outcome = send(chaos.web_url, plan)
        # Then every message is answered once, in order, and no tool step ran twice
        report = assert_invariants(chaos, outcome)
        failed_sends = len(chaos.telegram.calls_to("sendMessage")) - report.replies
    print(f"\nmodel and platform faults: {report.figures()}; model faults {faults.counts}; "
          f"sendMessage failures {failed_sends}")  # fmt: skip
    assert report.accepted == plan.chats * plan.messages
    assert faults.counts.get("429") and faults.counts.get("500") and faults.counts.get("hang")
    assert failed_sends > 0
