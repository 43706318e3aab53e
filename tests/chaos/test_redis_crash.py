"""Redis killed outright mid-load and restarted from its append-only file: webhooks during the
outage get 503 and are redelivered, the fleet's processes reconnect, nothing is lost or
doubled."""

from __future__ import annotations

import time
from pathlib import Path

from tests.chaos.fleet import ModelFaults, chaos_fleet
from tests.chaos.invariants import assert_invariants
from tests.chaos.load import Plan, Sender
from tests.chaos.scale import Scale
from tests.waiting import wait_until


def test_redis_killed_and_restarted_from_its_append_only_file_loses_nothing(
    tmp_path: Path, scale: Scale
) -> None:
    # Given a fleet under load, on a Redis that persists to an append-only file
    plan = Plan(chats=scale.redis_chats, messages=6, pause=1.0, seed=3)
    total = plan.chats * plan.messages
    with chaos_fleet(tmp_path, scale.workers, ModelFaults(latency=0.3)) as chaos:
        sender = Sender(chaos.web_url, plan)
        wait_until(
            lambda: sender.outcome.accepted_count >= total // 3,
            timeout=600,
            what="a third of the messages to be accepted",
        )
        # When Redis is killed outright, stays down while webhooks keep coming, and restarts
        chaos.kill_redis()
        refused_before = sender.outcome.statuses[503] + sender.outcome.statuses[0]
        wait_until(
            lambda: (
                sender.done()
                or sender.outcome.statuses[503] + sender.outcome.statuses[0] >= refused_before + 5
            ),
            timeout=60,
            what="webhooks to be refused while Redis is down",
        )
        chaos.restart_redis()
        restarted = time.monotonic()
        replies_at_restart = len(chaos.telegram.messages)
        wait_until(
            lambda: len(chaos.telegram.messages) > replies_at_restart,
            timeout=120,
            what="a reply after Redis came back",
        )
        first_reply_s = time.monotonic() - restarted
        outcome = sender.join()
        # Then the refused webhooks were redelivered and every invariant holds
        report = assert_invariants(chaos, outcome)
        logs = chaos.fleet.log_dir.glob("*.log")
        texts = [path.read_text(errors="replace") for path in logs]
        tracebacks = sum(text.count("Traceback") for text in texts)
        notices = sum(text.count("CPendingDeprecationWarning") for text in texts)
    refused = outcome.statuses[503] + outcome.statuses[0]
    print(f"\nRedis SIGKILL + restart: {report.figures()}; webhooks refused during the outage "
          f"{refused} (503: {outcome.statuses[503]}); first reply {first_reply_s:.1f} s after "
          f"the restart; tracebacks in the fleet's logs {tracebacks}")  # fmt: skip
    assert report.accepted == total
    # An outage is a known condition: each process says so in a line, without a traceback
    # (or Celery's deprecation notice at each reconnect)
    assert tracebacks == 0, f"{tracebacks} tracebacks in the fleet's logs"
    assert notices == 0, f"{notices} deprecation notices in the fleet's logs"
    assert refused > 0, "no webhook arrived while Redis was down: the outage was not exercised"
