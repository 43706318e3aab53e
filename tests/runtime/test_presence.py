"""Presence: fleet processes beat into Redis; readiness checks read who is live."""

from __future__ import annotations

import threading

from harness.runtime import Runtime
from harness.runtime.presence import PRESENCE_TTL_S, Heartbeat, beat, leave, live_members
from harness.runtime.scheduler import SchedulerThread
from tests.runtime_fixtures import ManualClock


def test_presence_beat_makes_a_worker_live_with_its_queues(runtime: Runtime) -> None:
    # Given a worker that beat once
    beat(runtime, "worker", ("harness",))
    # When the live members are read
    members = live_members(runtime)
    # Then it is listed with its role and queues
    assert [(m.id, m.role, m.queues) for m in members] == [
        (runtime.worker_id, "worker", ("harness",))
    ]


def test_presence_member_is_gone_after_the_ttl_without_a_beat(
    runtime: Runtime, clock: ManualClock
) -> None:
    beat(runtime, "worker")
    clock.advance(PRESENCE_TTL_S + 1)
    assert live_members(runtime) == [], "a process that stopped beating must not count as live"


def test_presence_filters_by_role_and_leave_removes_the_member(runtime: Runtime) -> None:
    beat(runtime, "scheduler")
    assert live_members(runtime, role="worker") == []
    assert [m.role for m in live_members(runtime, role="scheduler")] == ["scheduler"]
    leave(runtime)
    assert live_members(runtime) == []


def test_presence_heartbeat_beats_at_start_and_leaves_at_stop(runtime: Runtime) -> None:
    heartbeat = Heartbeat(runtime, "worker", interval=3600)
    heartbeat.start()
    assert [m.role for m in live_members(runtime)] == ["worker"]
    heartbeat.stop()
    assert live_members(runtime) == []


def test_a_scheduler_on_a_workers_thread_counts_as_a_scheduler_beside_the_worker(
    runtime: Runtime,
) -> None:
    # Given a worker that beats, and a scheduler started on a thread of the same process
    worker = Heartbeat(runtime, "worker", interval=3600)
    worker.start()
    passes = threading.Semaphore(0)
    scheduler = SchedulerThread(0.01, passes.release)
    scheduler.start(runtime)
    try:
        # When it has made passes
        assert passes.acquire(timeout=30) and passes.acquire(timeout=30)
        # Then the process is live once as a worker and once as a scheduler
        roles = {m.id: m.role for m in live_members(runtime)}
        assert roles == {runtime.worker_id: "worker", f"{runtime.worker_id}/scheduler": "scheduler"}
        # And its passes are the scheduler's (its heartbeat, which the dashboard reads)
        assert runtime.redis.hget(runtime.keys.scheduler_heartbeat(), runtime.worker_id)
    finally:
        scheduler.stop()
    # When it stops, the scheduler leaves and the worker stays
    assert [m.role for m in live_members(runtime)] == ["worker"]
    worker.stop()
