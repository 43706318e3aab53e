"""Model gateway processes die under load (`harness gateway --deliver`, as `harness up` runs it
beside a worker started `--no-gateway --queues harness`: each gateway also posts the replies):
SIGKILL at random moments, mid-stream or mid-post. Every accepted message is answered once
and in order; a killed gateway's calls are made again by another after their lease, its
replies posted by another (each chunk once), and each model request is answered into one
reply at most."""

from __future__ import annotations

import random
import signal
from pathlib import Path

from tests.chaos.fleet import ModelFaults, chaos_fleet
from tests.chaos.invariants import assert_invariants
from tests.chaos.load import Plan, Sender
from tests.chaos.scale import Scale


def test_gateway_processes_killed_at_random_moments_lose_and_double_nothing(
    tmp_path: Path, scale: Scale
) -> None:
    # Given a fleet whose model calls are made by two gateway processes, the model slow to
    # write (so a kill lands mid-stream), each message calling a tool
    rng = random.Random(33)
    plan = Plan(chats=scale.kill_chats, messages=scale.kill_messages, seed=3)
    total = plan.chats * plan.messages
    slow = ModelFaults(latency=0.8)
    with chaos_fleet(tmp_path, workers=scale.workers, faults=slow, gateways=2) as chaos:
        sender = Sender(chaos.web_url, plan)
        in_flight_at_kill = []
        # When a random gateway process is killed outright at random points, and replaced
        for k in range(scale.kills):
            chaos.wait_for_kill(k, scale.kills, total, rng)
            in_flight_at_kill.append(chaos.model.stalling())
            chaos.signal_worker(rng.choice(chaos.gateways()), signal.SIGKILL)
            chaos.start_gateway()
        outcome = sender.join()
        # Then every invariant holds: each message answered once, in order, no tool re-run
        report = assert_invariants(chaos, outcome)
    print(f"\ngateway SIGKILL x{scale.kills}: {report.figures()}; model calls in flight at "
          f"each kill: {in_flight_at_kill}")  # fmt: skip
    assert report.accepted == total
    assert report.tool_reruns_after_kill == 0
    assert any(in_flight_at_kill), "no kill landed while a model call was in flight"
