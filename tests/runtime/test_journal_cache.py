"""Resuming a run the worker parked: the claim sends what changed, not the whole journal."""

from __future__ import annotations

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.journals import JournalCache
from harness.runtime.kicker import RecordingKicker
from harness.runtime.scheduler import reap_once
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock

STEPS = 50


def _register_long_run(registry: FunctionRegistry, runtime: Runtime, calls: list[int]) -> None:
    @function(id="long", trigger=event("app/go"), registry=registry)
    def long(ctx: Context) -> int:
        total = sum(ctx.step.run("add", lambda i=i: calls.append(i) or i) for i in range(STEPS))
        ctx.step.sleep("nap", "1m")
        return total + ctx.step.run("last", lambda: 1)

    runtime.register_functions()


def _park_and_wake(runtime: Runtime, clock: ManualClock) -> str:
    run_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    drain(runtime)
    clock.advance(61)
    reap_once(runtime)
    return run_id


def test_a_worker_resuming_a_run_it_parked_gets_only_the_wake_up_record(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run of 50 steps that this worker parked in a sleep, and the sleep has ended
    _register_long_run(registry, runtime, [])
    run_id = _park_and_wake(runtime, clock)
    kept = runtime.journals.version(run_id)
    # When the worker claims it with the version of the journal it kept
    claim = runtime.ledger.claim(run_id, "w", runtime.now_ms(), 10_000, 250, 0, kept)
    # Then the claim carries the sleep's record alone
    assert claim.state == "ok"
    assert not claim.journal_complete
    assert list(claim.journal or {}) == ["nap:0"]


def test_a_worker_without_the_journal_gets_all_of_it(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a parked run whose sleep has ended
    _register_long_run(registry, runtime, [])
    run_id = _park_and_wake(runtime, clock)
    # When a worker that kept nothing claims it
    claim = runtime.ledger.claim(run_id, "w", runtime.now_ms(), 10_000, 250)
    # Then it gets the whole journal
    assert claim.journal_complete
    assert len(claim.journal or {}) == STEPS + 1


def test_a_resumed_run_replays_from_the_kept_journal_without_redoing_steps(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run of 50 steps parked in a sleep
    calls: list[int] = []
    _register_long_run(registry, runtime, calls)
    run_id = _park_and_wake(runtime, clock)
    # When it resumes in the worker that parked it
    outcomes = drain(runtime)
    # Then it completes with the recorded results, each step having run once
    assert outcomes == [(run_id, "completed")]
    record = runtime.ledger.run(run_id)
    assert record is not None and record.result == sum(range(STEPS)) + 1
    assert calls == list(range(STEPS))


def test_another_worker_resumes_a_parked_run_from_the_whole_journal(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run of 50 steps parked in a sleep by one worker
    calls: list[int] = []
    _register_long_run(registry, runtime, calls)
    run_id = _park_and_wake(runtime, clock)
    # When a worker that kept nothing resumes it
    other = Runtime(redis=runtime.redis, kicker=RecordingKicker(), registry=registry, clock=clock)
    other.kicker.pending.extend(runtime.kicker.pending)  # type: ignore[attr-defined]
    outcomes = drain(other)
    # Then it completes the same way, no step having run twice
    assert outcomes == [(run_id, "completed")]
    assert calls == list(range(STEPS))


def test_the_kept_journals_are_bounded_by_their_records() -> None:
    # Given a cache that holds at most five records
    cache = JournalCache(size=10, records=5)
    # When three journals of two records are kept
    for run in ("a", "b", "c"):
        cache.keep(run, 1, {f"{run}:0": {}, f"{run}:1": {}})
    # Then the oldest was dropped to stay within the bound, and the others are kept
    assert cache.version("a") == -1
    assert cache.version("b") == 1 and cache.version("c") == 1
