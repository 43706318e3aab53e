"""A stopping worker hands the runs it executes back at once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import Kick, RecordingKicker
from harness.runtime.leases import hand_back
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock


def test_handing_back_lets_another_worker_resume_the_run_without_waiting_for_the_lease(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run whose second step is in flight on this worker (it ends when told to stop)
    started = threading.Event()
    calls: list[str] = []

    def slow(ctx: Context) -> str:
        calls.append("slow")
        if not started.is_set():
            started.set()
            ctx.cancelled.wait(30)
            return "interrupted"
        return "done"

    @function(id="slow", trigger=event("app/go"), registry=registry)
    def handler(ctx: Context) -> list[str]:
        first = ctx.step.run("first", lambda: "one")
        return [first, ctx.step.run("second", slow, ctx)]

    kicker = runtime.kicker
    assert isinstance(kicker, RecordingKicker)
    run_id, worker, outcome = _advance_in_thread(runtime, "app/go")
    assert started.wait(10), "the slow step never started"
    # When the worker hands its runs back (clock unchanged: the lease is far from expiring)
    assert hand_back(runtime) == 1
    worker.join(10)
    # Then the stopped execution wrote nothing more, and the run is queued with a new kick
    assert outcome == ["lease-lost"]
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "queued"
    assert [k.run_id for k in kicker.pending] == [run_id]
    # And a kick that still reaches the stopping worker is passed on, not run
    assert advance(runtime, run_id, kicker.pending[0].seq) == "passed-on"
    assert len(kicker.pending) == 2
    # And another worker resumes it at once, without redoing the completed step
    assert _resumed_elsewhere(runtime, registry, kicker.pending.pop()) == ["one", "done"]
    assert calls == ["slow", "slow"], "the interrupted step runs again, the completed one not"


def test_a_long_step_keeps_its_lease_renewed(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose step outlasts several lease TTLs (0.3 s), watching the lease's end
    runtime.lease_ttl = 0.3
    seen: list[int] = []

    def watch(ctx: Context, run_key: str) -> int:
        deadline = time.monotonic() + 60  # generous: only a lease never renewed fails
        while len(set(seen)) < 3 and time.monotonic() < deadline:
            seen.append(int(runtime.redis.hget(run_key, "lease_until") or 0))
            clock.advance(0.01)  # the runtime's clock, so each renewal moves the lease's end
            ctx.cancelled.wait(0.02)
        return len(set(seen))

    @function(id="long", trigger=event("app/long"), registry=registry)
    def handler(ctx: Context) -> int:
        return ctx.step.run("watch", watch, ctx, runtime.keys.run(ctx.run_id))

    runtime.register_functions()
    run_id = publish({"name": "app/long"}, runtime=runtime).run_ids[0]

    # When it runs
    outcome = advance(runtime, run_id)

    # Then the lease was moved on at least twice while the step ran, and the run completed
    assert outcome == "completed", outcome
    assert len(set(seen)) >= 3, f"the lease's end never moved: {sorted(set(seen))}"


def test_a_lease_taken_by_another_worker_stops_the_step(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run whose lease another worker takes while its step runs
    runtime.lease_ttl = 0.3
    noticed: list[bool] = []

    def taken(ctx: Context, run_key: str) -> bool:
        runtime.redis.hincrby(run_key, "epoch", 1)  # what another worker's claim does
        noticed.append(ctx.cancelled.wait(30))  # generous: only a renewer that never noticed fails
        return noticed[-1]

    @function(id="taken", trigger=event("app/taken"), registry=registry)
    def handler(ctx: Context) -> bool:
        return ctx.step.run("taken", taken, ctx, runtime.keys.run(ctx.run_id))

    runtime.register_functions()
    run_id = publish({"name": "app/taken"}, runtime=runtime).run_ids[0]

    # When it runs, Then the refused renewal told the step to stop, and nothing was written
    assert advance(runtime, run_id) == "lease-lost"
    assert noticed == [True], "the step was not told its lease was lost"
    assert runtime.ledger.journal(run_id) == {}


def test_a_worker_stalled_past_its_lease_never_starts_a_step_the_next_owner_completed(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose worker stalls between two steps for longer than its lease (a starved
    # process: its renewer did not run either), while another worker takes the run over and
    # completes the second step (its tool) and the run
    executed: list[str] = []
    stalled: list[bool] = []

    def tool(owner: str) -> str:
        executed.append(owner)
        return owner

    @function(id="stall", trigger=event("app/stall"), registry=registry)
    def handler(ctx: Context) -> str:
        ctx.step.run("prepare", lambda: "ready")
        first = not stalled
        if first:
            stalled.append(True)
            clock.advance(runtime.lease_ttl + 1)  # the lease ran out, nobody renewed it
            assert advance(runtime, ctx.run_id) == "completed", "the next owner's execution"
        return str(ctx.step.run("tool", tool, "stalled" if first else "next owner"))

    runtime.register_functions()
    run_id = publish({"name": "app/stall"}, runtime=runtime).run_ids[0]

    # When the stalled worker goes on
    outcome = advance(runtime, run_id)

    # Then it stops at the step boundary: the completed tool step is not run again
    assert outcome == "lease-lost"
    assert executed == ["next owner"], f"the tool ran again after its step completed: {executed}"
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "completed" and record.result == "next owner"


def test_a_late_renewal_is_made_at_the_step_boundary_and_the_run_goes_on(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a run whose worker stalls between two steps until less than half its lease is
    # left (its renewer late), while no other worker takes the run
    lease_ends: list[int] = []

    def tool(run_key: str) -> str:
        lease_ends.append(int(runtime.redis.hget(run_key, "lease_until") or 0))
        return "done"

    @function(id="late", trigger=event("app/late"), registry=registry)
    def handler(ctx: Context) -> str:
        ctx.step.run("prepare", lambda: "ready")
        clock.advance(runtime.lease_ttl * 0.6)
        return str(ctx.step.run("tool", tool, runtime.keys.run(ctx.run_id)))

    runtime.register_functions()
    run_id = publish({"name": "app/late"}, runtime=runtime).run_ids[0]

    # When it goes on
    outcome = advance(runtime, run_id)

    # Then the tool step started on a lease renewed at the boundary, and the run completed
    assert outcome == "completed"
    assert lease_ends == [runtime.now_ms() + int(runtime.lease_ttl * 1000)], lease_ends


def test_a_step_that_ends_because_its_run_was_handed_back_is_not_recorded(
    runtime: Runtime, registry: FunctionRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a run whose step ends early when its execution is told to stop, and a hand-back
    # whose release reaches Redis only after that step has returned (the race a loaded
    # machine makes: the execution is told before the fence moves)
    started, returned = threading.Event(), threading.Event()

    def slow(ctx: Context) -> str:
        if not started.is_set():
            started.set()
            ctx.cancelled.wait(30)
            returned.set()
            return "interrupted"
        return "done"

    @function(id="slow", trigger=event("app/go"), registry=registry)
    def handler(ctx: Context) -> list[str]:
        return [ctx.step.run("first", lambda: "one"), ctx.step.run("second", slow, ctx)]

    release = runtime.ledger.release

    def late_release(*args: Any, **kwargs: Any) -> Any:
        returned.wait(10)
        time.sleep(0.2)  # the stopped step's commit, if it were made, lands first
        return release(*args, **kwargs)

    monkeypatch.setattr(runtime.ledger, "release", late_release)
    kicker = runtime.kicker
    assert isinstance(kicker, RecordingKicker)
    run_id, worker, outcome = _advance_in_thread(runtime, "app/go")
    assert started.wait(10), "the slow step never started"
    # When the worker hands its runs back
    assert hand_back(runtime) == 1
    worker.join(10)
    # Then the stopped execution recorded nothing of its step, and the next one runs it
    assert outcome == ["lease-lost"]
    assert "second:0" not in runtime.ledger.journal(run_id)
    assert _resumed_elsewhere(runtime, registry, kicker.pending.pop()) == ["one", "done"]


def test_a_step_in_flight_when_the_worker_hands_back_is_recorded_not_done_again(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run whose first step is in flight on this worker: a platform call that does not
    # watch for a stop (a reply being posted), ending shortly after the hand-back begins
    posting, go_on = threading.Event(), threading.Event()
    calls: list[str] = []

    def post() -> str:
        calls.append("post")
        posting.set()
        go_on.wait(10)
        return "posted"

    @function(id="deliver", trigger=event("app/reply"), registry=registry)
    def handler(ctx: Context) -> list[str]:
        first = ctx.step.run("post", post)
        return [first, ctx.step.run("complete", lambda: "completed")]

    kicker = runtime.kicker
    assert isinstance(kicker, RecordingKicker)
    run_id, worker, outcome = _advance_in_thread(runtime, "app/reply")
    assert posting.wait(10), "the post never started"
    # When the worker hands its runs back, and the post ends during the hand-back's grace
    threading.Timer(0.2, go_on.set).start()
    assert hand_back(runtime, grace=10) == 1
    worker.join(10)
    # Then the post was recorded under the lease, and the execution stopped before the next
    assert outcome == ["lease-lost"]
    assert "post:0" in runtime.ledger.journal(run_id)
    assert "complete:0" not in runtime.ledger.journal(run_id)
    # And another worker resumes the run without posting again
    assert _resumed_elsewhere(runtime, registry, kicker.pending.pop()) == ["posted", "completed"]
    assert calls == ["post"], "the post in flight at the hand-back was made twice"


def test_a_step_still_running_after_the_grace_keeps_its_run_until_it_ends(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run whose step outlasts the hand-back's grace and does not watch for a stop
    # (a tool waiting on the network)
    running, go_on = threading.Event(), threading.Event()
    calls: list[str] = []

    def fetch() -> str:
        calls.append("fetch")
        if len(calls) == 1:
            running.set()
            go_on.wait(10)
        return "fetched"

    @function(id="fetcher", trigger=event("app/fetch"), registry=registry)
    def handler(ctx: Context) -> str:
        return str(ctx.step.run("fetch", fetch))

    kicker = runtime.kicker
    assert isinstance(kicker, RecordingKicker)
    run_id, worker, outcome = _advance_in_thread(runtime, "app/fetch")
    assert running.wait(10), "the step never started"
    # When the worker hands its runs back and the grace passes with the step still running
    assert hand_back(runtime, grace=0.2) == 1
    # Then the run stays this worker's while its step runs: no other worker may start it
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "running", record
    assert not kicker.pending, "the run was kicked while its step still ran here"
    # And once the step ends (its result, told to stop, is not recorded) the run is released
    go_on.set()
    worker.join(10)
    assert outcome == ["lease-lost"]
    assert "fetch:0" not in runtime.ledger.journal(run_id)
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "queued"
    # And another worker does the step again, after this one ended it, never beside it
    assert _resumed_elsewhere(runtime, registry, kicker.pending.pop()) == "fetched"
    assert calls == ["fetch", "fetch"]


def test_a_batch_of_steps_in_flight_is_waited_for_like_a_step(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run whose batch of steps (`run_all`) is in flight when the worker hands back
    started, go_on = threading.Event(), threading.Event()
    calls: list[int] = []

    def post(n: int) -> int:
        calls.append(n)
        started.set()
        go_on.wait(10)
        return n

    @function(id="batch", trigger=event("app/batch"), registry=registry)
    def handler(ctx: Context) -> list[Any]:
        posted = ctx.step.run_all("post", post, [(1,), (2,)], workers=2)
        return [*posted, ctx.step.run("after", lambda: "after")]

    kicker = runtime.kicker
    assert isinstance(kicker, RecordingKicker)
    run_id, worker, outcome = _advance_in_thread(runtime, "app/batch")
    assert started.wait(10), "the batch never started"
    # When the worker hands back, and the batch ends during the grace
    threading.Timer(0.2, go_on.set).start()
    assert hand_back(runtime, grace=10) == 1
    worker.join(10)
    # Then both steps were recorded under the lease, and the next worker does neither again
    assert outcome == ["lease-lost"]
    journal = runtime.ledger.journal(run_id)
    assert {"post:0", "post:1"} <= set(journal) and "after:0" not in journal
    assert _resumed_elsewhere(runtime, registry, kicker.pending.pop()) == [1, 2, "after"]
    assert sorted(calls) == [1, 2], "a step of the batch in flight was done twice"


def _advance_in_thread(runtime: Runtime, name: str) -> tuple[str, threading.Thread, list[str]]:
    """Register the functions, publish an event `name` and advance its run on a thread of its
    own: the run's id, the thread, and the list its outcome is appended to when it ends."""
    runtime.register_functions()
    kicker = runtime.kicker
    assert isinstance(kicker, RecordingKicker)
    run_id = publish({"name": name}, runtime=runtime).run_ids[0]
    kick = kicker.pending.popleft()
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.append(advance(runtime, run_id, kick.seq)))
    worker.start()
    return run_id, worker, outcome


def _resumed_elsewhere(runtime: Runtime, registry: FunctionRegistry, kick: Kick) -> Any:
    """The result of the run `kick` names, run to completion by another worker."""
    other = Runtime(redis=runtime.redis, kicker=RecordingKicker(), registry=registry)
    other.kicker.pending.append(kick)  # type: ignore[attr-defined]
    assert drain(other)[-1] == (kick.run_id, "completed")
    record = runtime.ledger.run(kick.run_id)
    assert record is not None
    return record.result
