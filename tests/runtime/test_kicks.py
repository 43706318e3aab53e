"""Kicks: at most one outstanding per run; only a lost kick is sent again, with backoff."""

from __future__ import annotations

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.runtime.scheduler import reap_once
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock


def _kicker(runtime: Runtime) -> RecordingKicker:
    assert isinstance(runtime.kicker, RecordingKicker)
    return runtime.kicker


def _register_noop(registry: FunctionRegistry, runtime: Runtime) -> None:
    @function(id="noop", trigger=event("app/go"), registry=registry)
    def noop(ctx: Context) -> str:
        return "ok"

    runtime.register_functions()


def _reap_for(runtime: Runtime, clock: ManualClock, seconds: int) -> None:
    for _ in range(seconds):
        clock.advance(1)
        reap_once(runtime)


def test_kicks_waiting_for_a_busy_worker_are_never_sent_again(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given 500 runs whose kicks wait in the queue while no worker is free
    _register_noop(registry, runtime)
    for i in range(500):
        publish({"name": "app/go", "id": f"e{i}"}, runtime=runtime)
    assert len(_kicker(runtime).pending) == 500
    # When the scheduler reaps every second for a minute
    _reap_for(runtime, clock, 60)
    # Then the queue still holds one kick per run
    assert len(_kicker(runtime).pending) == 500, "a queued kick must not be sent again"


def test_a_kick_lost_by_the_broker_is_sent_again_once_with_backoff(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose kick the broker lost (nothing is left in its queue)
    _register_noop(registry, runtime)
    run_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    _kicker(runtime).pending.clear()
    # When the scheduler reaps for a few seconds
    _reap_for(runtime, clock, 4)
    # Then the kick is sent again, once
    assert [k.run_id for k in _kicker(runtime).pending] == [run_id]
    # And lost again (it was re-sent at 3 s), it is re-sent only after a doubled wait, at 9 s
    _kicker(runtime).pending.clear()
    _reap_for(runtime, clock, 4)
    assert not _kicker(runtime).pending, "no kick may be re-sent before its backoff ends"
    _reap_for(runtime, clock, 1)
    assert [k.run_id for k in _kicker(runtime).pending] == [run_id]
    # And the re-sent kick runs the run
    assert drain(runtime) == [(run_id, "completed")]


def test_a_kick_the_queue_moved_past_is_sent_again_while_others_wait(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given three queued runs: the first one's kick was lost, the second's was delivered
    _register_noop(registry, runtime)
    lost, delivered, waiting = (
        publish({"name": "app/go", "id": f"e{i}"}, runtime=runtime).run_ids[0] for i in range(3)
    )
    kicker = _kicker(runtime)
    kicker.pending.popleft()
    second = kicker.pending.popleft()
    assert advance(runtime, second.run_id, second.seq) == "completed"
    # When the scheduler reaps past the first look, with the third kick still queued
    _reap_for(runtime, clock, 4)
    # Then only the lost kick is sent again
    assert [k.run_id for k in kicker.pending] == [waiting, lost]
    assert delivered == second.run_id


def test_a_run_with_an_outstanding_kick_is_not_kicked_twice(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose worker died: its lease expires while its recovery kick waits
    _register_noop(registry, runtime)
    run_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    kick = _kicker(runtime).pending.popleft()
    runtime.ledger.claim(run_id, "dead-worker", runtime.now_ms(), 10_000, 250, kick.seq)
    # When the scheduler reaps through several lease periods without a free worker
    clock.advance(11)
    _reap_for(runtime, clock, 40)
    # Then one recovery kick is outstanding (and one untracked at the front of the queue),
    # not one per lease period
    pending = _kicker(runtime).pending
    assert [(k.run_id, k.front) for k in pending] == [(run_id, True), (run_id, False)]
    assert drain(runtime) == [(run_id, "completed"), (run_id, "terminal")]


def test_a_run_recovered_from_a_dead_worker_is_taken_before_the_backlog(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose worker died holding it, and five new runs queued behind it
    _register_noop(registry, runtime)
    run_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    kick = _kicker(runtime).pending.popleft()
    runtime.ledger.claim(run_id, "dead-worker", runtime.now_ms(), 10_000, 250, kick.seq)
    backlog = [
        publish({"name": "app/go", "id": f"e{i}"}, runtime=runtime).run_ids[0] for i in range(5)
    ]
    # When its lease expires and the scheduler reaps
    clock.advance(11)
    reap_once(runtime)
    # Then the next kick a worker takes is the recovered run's, and it completes
    first = _kicker(runtime).pending.popleft()
    assert (first.run_id, first.front, first.seq) == (run_id, True, 0)
    assert advance(runtime, first.run_id, first.seq) == "completed"
    # And the backlog follows in order, then the recovered run's tracked kick (a no-op now)
    assert [k.run_id for k in _kicker(runtime).pending] == [*backlog, run_id]
    assert drain(runtime) == [*((r, "completed") for r in backlog), (run_id, "terminal")]
