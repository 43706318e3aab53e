"""The runtime across real processes: Redis server, Celery workers, scheduler."""

from __future__ import annotations

import os
import signal
import threading

import pytest
import redis

from harness.runtime import publish
from tests.integration.conftest import FLEET_WAIT_S, Fleet, runtime_for
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def _status(fleet: Fleet, run_id: str) -> str:
    record = runtime_for(fleet).ledger.run(run_id)
    return record.status if record else ""


def test_sigkill_mid_run_resumes_elsewhere_without_redoing_completed_steps(
    own_fleet: Fleet,
) -> None:
    # Given a run of five slow steps in progress on some worker
    rt = runtime_for(own_fleet)
    run_id = publish({"name": "it/slow", "data": {"seconds": 0.5}}, runtime=rt).run_ids[0]
    wait_until(
        lambda: len(rt.ledger.journal(run_id)) >= 2,
        timeout=FLEET_WAIT_S,
        what="two steps to complete",
    )
    owner = rt.ledger.run(run_id).owner  # type: ignore[union-attr]
    pid = int(owner.split(":")[1])
    # When that worker is killed outright
    os.kill(pid, signal.SIGKILL)
    completed_at_kill = set(rt.ledger.journal(run_id))
    # Then another worker finishes the run, and no completed step ran twice
    wait_until(
        lambda: _status(own_fleet, run_id) == "completed",
        timeout=FLEET_WAIT_S,
        what="the run to complete elsewhere",
    )
    counts = {i: int(rt.redis.get(f"it:exec:{run_id}:{i}") or 0) for i in range(5)}
    for key in completed_at_kill:
        index = int(key.split(":")[1])
        assert counts[index] == 1, (
            f"step {key} completed before the kill but ran {counts[index]} times"
        )
    assert all(n >= 1 for n in counts.values()), counts
    assert rt.ledger.run(run_id).result == [0, 1, 2, 3, 4]  # type: ignore[union-attr]


def test_singleton_never_overlaps_and_keeps_arrival_order(fleet: Fleet) -> None:
    # Given many events for one key published at once from several threads
    rt = runtime_for(fleet)
    key = "k-overlap"
    accepted: list[int] = []
    lock = threading.Lock()

    def send(n: int) -> None:
        publish({"name": "it/serial", "data": {"key": key, "n": n}}, runtime=rt)
        with lock:
            accepted.append(n)

    threads = [threading.Thread(target=send, args=(n,)) for n in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then every run executed, one at a time, in the order the bus accepted them
    wait_until(
        lambda: rt.redis.llen(f"it:order:{key}") == 24, timeout=FLEET_WAIT_S, what="all 24 runs"
    )
    actives = rt.redis.lrange(f"it:actives:{key}", 0, -1)
    assert set(actives) == {"1"}, f"runs of one key overlapped: {actives}"
    stream_order = [
        int(e["data"]["n"])
        for e in (
            __import__("json").loads(f["event"]) for _id, f in rt.redis.xrange(rt.keys.events)
        )
        if e["name"] == "it/serial" and e["data"]["key"] == key
    ]
    assert [int(n) for n in rt.redis.lrange(f"it:order:{key}", 0, -1)] == stream_order


def test_cancel_mode_aborts_the_running_step_and_the_new_message_is_answered(fleet: Fleet) -> None:
    rt = runtime_for(fleet)
    session = "s-cancel"
    first = publish(
        {"name": "it/chat", "data": {"session": session, "text": "first", "think": 25}}, runtime=rt
    ).run_ids[0]
    wait_until(
        lambda: rt.redis.lrange(f"it:started:{session}", 0, -1) == ["first"],
        timeout=FLEET_WAIT_S,
        what="first turn",
    )
    publish({"name": "it/chat", "data": {"session": session, "text": "second"}}, runtime=rt)
    wait_until(
        lambda: rt.redis.lrange(f"it:replied:{session}", 0, -1),
        timeout=FLEET_WAIT_S,
        what="a reply",
    )
    assert rt.redis.lrange(f"it:replied:{session}", 0, -1) == ["second"]
    assert _status(fleet, first) == "cancelled"
    assert rt.ledger.journal(first)["think:0"]["v"] == "aborted", "the in-flight step must abort"


def test_sleep_and_wait_for_event_resume_across_processes(fleet: Fleet) -> None:
    rt = runtime_for(fleet)
    approved = publish({"name": "it/order", "data": {"order": "o-1"}}, runtime=rt).run_ids[0]
    wait_until(
        lambda: _status(fleet, approved) == "waiting",
        timeout=FLEET_WAIT_S,
        what="the run to wait for approval",
    )
    publish({"name": "it/approved", "data": {"order": "o-1", "by": "ana"}}, runtime=rt)
    wait_until(
        lambda: _status(fleet, approved) == "completed",
        timeout=FLEET_WAIT_S,
        what="the approval to resume it",
    )
    assert rt.ledger.run(approved).result == "ana"  # type: ignore[union-attr]


def test_duplicate_publish_runs_once_across_the_fleet(fleet: Fleet) -> None:
    rt = runtime_for(fleet)
    results = [
        publish({"name": "it/slow", "id": "dup-1", "data": {"seconds": 0}}, runtime=rt)
        for _ in range(3)
    ]
    assert [r.duplicate for r in results] == [False, True, True]
    run_id = results[0].run_ids[0]
    wait_until(lambda: _status(fleet, run_id) == "completed", timeout=FLEET_WAIT_S, what="the run")
    assert int(rt.redis.get(f"it:exec:{run_id}:0") or 0) == 1


def test_redis_client_is_reachable(redis_url: str) -> None:
    assert redis.Redis.from_url(redis_url).ping()
