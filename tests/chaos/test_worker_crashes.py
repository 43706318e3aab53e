"""Workers die under load: SIGKILL at random moments, and a deploy's rolling SIGTERM restart.
Every accepted message is answered once and in order; no completed tool step runs again."""

from __future__ import annotations

import random
import signal
from pathlib import Path

from tests.chaos.fleet import ModelFaults, chaos_fleet
from tests.chaos.invariants import assert_invariants
from tests.chaos.load import Plan, Sender
from tests.chaos.scale import Scale
from tests.waiting import wait_until


def test_workers_killed_at_random_moments_lose_and_double_nothing(
    tmp_path: Path, scale: Scale
) -> None:
    # Given a fleet answering many conversations, each message calling a tool
    rng = random.Random(18)
    plan = Plan(chats=scale.kill_chats, messages=scale.kill_messages, seed=1)
    total = plan.chats * plan.messages
    with chaos_fleet(tmp_path, workers=scale.workers, faults=ModelFaults(latency=0.3)) as chaos:
        sender = Sender(chaos.web_url, plan)
        recoveries = []
        # When a random worker is killed outright at random points of the load, and replaced
        for k in range(scale.kills):
            chaos.wait_for_kill(k, scale.kills, total, rng)
            victim = rng.choice(chaos.workers())
            pid = chaos.fleet.procs[victim].pid
            held = chaos.runs_held_by(pid)
            chaos.signal_worker(victim, signal.SIGKILL)
            chaos.start_worker()
            recoveries.append((len(held), chaos.wait_taken_over(held, pid)))
        outcome = sender.join()
        # Then every invariant holds
        report = assert_invariants(chaos, outcome)
    print(f"\nSIGKILL x{scale.kills}: {report.figures()}; runs held and seconds to take them "
          f"over per kill: {[(n, round(s, 1)) for n, s in recoveries]}")  # fmt: skip
    assert report.accepted == total


def test_rolling_sigterm_restart_hands_runs_over_without_losing_or_doubling(
    tmp_path: Path, scale: Scale
) -> None:
    # Given a fleet under load
    plan = Plan(chats=scale.kill_chats, messages=scale.kill_messages, seed=2)
    total = plan.chats * plan.messages
    slow = ModelFaults(latency=0.5)
    with chaos_fleet(tmp_path, scale.workers, slow, HARNESS_LEASE_TTL="60") as chaos:
        sender = Sender(chaos.web_url, plan)
        handovers = []
        # When each worker in turn is asked to stop and a new one started (a deploy)
        for i, old in enumerate(list(chaos.workers())):
            wait_until(
                lambda i=i: len(chaos.telegram.messages) >= total * (i + 1) // (scale.workers + 3),
                timeout=600,
                what="replies before the next restart",
            )
            pid = chaos.fleet.procs[old].pid
            # a turn parks on its model call, so a worker holds runs only between calls: a
            # stop that finds it holding none would test no hand-over
            held = wait_until(
                lambda pid=pid: chaos.runs_held_by(pid), "the worker to hold a run", interval=0.005
            )
            chaos.signal_worker(old, signal.SIGTERM)
            chaos.start_worker()
            # leases last 60 s: a run taken over sooner was handed back
            handovers.append((len(held), chaos.wait_taken_over(held, pid, timeout=30)))
            chaos.fleet.procs[old].wait(timeout=60)
            chaos.wait_workers_ready(scale.workers)
        outcome = sender.join()
        report = assert_invariants(chaos, outcome)
    print(f"\nrolling SIGTERM restart: {report.figures()}; runs held and seconds to hand "
          f"them over per worker: {[(n, round(s, 1)) for n, s in handovers]}")  # fmt: skip
    assert sum(n for n, _ in handovers) > 0, "no worker held a run when it was stopped"
    assert report.tool_reruns_after_kill == 0
