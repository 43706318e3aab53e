"""A stopping worker hands the runs it executes back at once."""

from __future__ import annotations

import threading

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.runtime.leases import hand_back
from harness.runtime.testing import drain


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

    runtime.register_functions()
    kicker = runtime.kicker
    assert isinstance(kicker, RecordingKicker)
    run_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    kick = kicker.pending.popleft()
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.append(advance(runtime, run_id, kick.seq)))
    worker.start()
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
    other = Runtime(redis=runtime.redis, kicker=RecordingKicker(), registry=registry)
    other.kicker.pending.append(kicker.pending.pop())  # type: ignore[attr-defined]
    assert drain(other)[-1] == (run_id, "completed")
    record = runtime.ledger.run(run_id)
    assert record is not None and record.result == ["one", "done"]
    assert calls == ["slow", "slow"], "the interrupted step runs again, the completed one not"
