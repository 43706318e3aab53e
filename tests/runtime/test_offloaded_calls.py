"""Offloaded calls (`step.offload`): the run parks holding no worker, a gateway makes the call
under a lease, and its outcome, recorded once, resumes the run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.calls import ABORT, KEEP, LOST, AsyncCallBoard
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock

LEASE_MS = 5000


def _asker(registry: FunctionRegistry, made: list[str]) -> None:
    @function(id="asker", trigger=event("app/ask"), registry=registry, retries=2)
    def asker(ctx: Context) -> Any:
        def ask() -> Any:
            made.append("ask")  # the step's function runs on each replay until recorded
            outcome = ctx.step.offload("echo", json.dumps({"q": ctx.event.data["q"]}))
            if "e" in outcome:
                raise RuntimeError(outcome["e"])
            return outcome["v"]

        return ctx.step.run("ask", ask)


def _status(runtime: Runtime, run_id: str) -> str:
    record = runtime.ledger.run(run_id)
    assert record is not None
    return record.status


def _answer_all(runtime: Runtime, answer: Any, owner: str = "gw-1") -> int:
    """A gateway: take every due call and settle it with `answer(request)`."""
    taken = runtime.calls.take("echo", owner, runtime.now_ms(), LEASE_MS, 100)
    for call in taken:
        ok, kicks = runtime.calls.settle(
            call.call_id, call.token, answer(json.loads(call.request)), runtime.now_ms()
        )
        assert ok
        for kick in kicks:
            runtime.kicker.kick(kick)
    return len(taken)


def test_offloaded_call_parks_the_run_until_a_gateway_answers(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a function whose step offloads a call
    made: list[str] = []
    _asker(registry, made)
    runtime.register_functions()
    run_id = publish({"name": "app/ask", "data": {"q": "hi"}}, runtime=runtime).run_ids[0]
    # When it runs with no gateway about
    drain(runtime)
    # Then it waits on the call, holding no lease
    assert _status(runtime, run_id) == "waiting"
    assert runtime.calls.due("echo", runtime.now_ms()) == 1
    # When a gateway answers
    assert _answer_all(runtime, lambda req: {"v": req["q"] + "!"}) == 1
    drain(runtime)
    # Then the run resumes with the answer
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "completed" and record.result == "hi!"
    assert runtime.calls.due("echo", runtime.now_ms()) == 0


def test_call_server_in_drain_answers_offloaded_calls(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    _asker(registry, [])
    runtime.register_functions()
    runtime.call_servers.append(lambda: _answer_all(runtime, lambda req: {"v": req["q"]}))
    run_id = publish({"name": "app/ask", "data": {"q": "x"}}, runtime=runtime).run_ids[0]
    drain(runtime)
    assert _status(runtime, run_id) == "completed"


def test_a_dead_gateways_call_is_taken_again_after_its_lease_and_its_late_answer_refused(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a call taken by a gateway that then dies (never settles)
    _asker(registry, [])
    runtime.register_functions()
    run_id = publish({"name": "app/ask", "data": {"q": "x"}}, runtime=runtime).run_ids[0]
    drain(runtime)
    [first] = runtime.calls.take("echo", "dead", runtime.now_ms(), LEASE_MS, 10)
    # When the lease has not run out, nobody else may take it
    assert runtime.calls.take("echo", "gw-2", runtime.now_ms(), LEASE_MS, 10) == []
    # When it has, another gateway takes it under a new token
    clock.advance(LEASE_MS / 1000 + 1)
    [second] = runtime.calls.take("echo", "gw-2", runtime.now_ms(), LEASE_MS, 10)
    assert second.call_id == first.call_id and second.token != first.token
    # Then the dead gateway's late answer is refused and changes nothing
    assert runtime.calls.settle(first.call_id, first.token, {"v": "late"}, 0) == (False, ())
    assert runtime.calls.keep(
        "echo", runtime.now_ms(), LEASE_MS, [(first.call_id, first.token)]
    ) == [LOST]
    ok, kicks = runtime.calls.settle(second.call_id, second.token, {"v": "fresh"}, 0)
    assert ok
    # And a recorded answer is never replaced nor asked for again
    assert runtime.calls.settle(second.call_id, second.token, {"v": "again"}, 0)[0] is False
    for kick in kicks:
        runtime.kicker.kick(kick)
    drain(runtime)
    record = runtime.ledger.run(run_id)
    assert record is not None and record.result == "fresh"
    assert runtime.calls.take("echo", "gw-3", runtime.now_ms() + 10**9, LEASE_MS, 10) == []


def test_a_failed_call_is_retried_by_the_steps_rules_with_a_new_call(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a gateway whose first answer is an error
    _asker(registry, [])
    runtime.register_functions()
    answers = iter([{"e": "overloaded"}, {"v": "ok"}])
    runtime.call_servers.append(lambda: _answer_all(runtime, lambda req: next(answers)))
    run_id = publish({"name": "app/ask", "data": {"q": "x"}}, runtime=runtime).run_ids[0]
    # When it runs, and the retry's backoff passes
    drain(runtime)
    clock.advance(60)
    drain(runtime)
    # Then the retry made a second call and completed with its answer
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "completed" and record.result == "ok"


def test_keep_renews_held_calls_and_says_to_abort_a_cancelled_runs(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    _asker(registry, [])
    runtime.register_functions()
    run_id = publish({"name": "app/ask", "data": {"q": "x"}}, runtime=runtime).run_ids[0]
    drain(runtime)
    [held] = runtime.calls.take("echo", "gw", runtime.now_ms(), LEASE_MS, 10)
    pair = [(held.call_id, held.token)]
    assert runtime.calls.keep("echo", runtime.now_ms(), LEASE_MS, pair) == [KEEP]
    # When the run is cancelled while the call is made
    ok, kicks = runtime.ledger.request_cancel(run_id, "stop", runtime.now_ms())
    assert ok
    # Then the gateway is told to abort, and the call is no longer offered
    assert runtime.calls.keep("echo", runtime.now_ms(), LEASE_MS, pair) == [ABORT]
    assert runtime.calls.due("echo", runtime.now_ms() + 10**9) == 0
    for kick in kicks:
        runtime.kicker.kick(kick)
    drain(runtime)
    assert _status(runtime, run_id) == "cancelled"


def test_a_run_that_stops_waiting_on_its_call_moves_the_stops_counter_and_a_settle_does_not(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given two runs waiting on their calls
    _asker(registry, [])
    runtime.register_functions()
    first, second = (
        publish({"name": "app/ask", "data": {"q": q}}, runtime=runtime).run_ids[0]
        for q in ("a", "b")
    )
    drain(runtime)
    before = runtime.calls.stops()
    taken = {json.loads(c.request)["q"]: c for c in runtime.calls.take("echo", "gw", 0, 10**12, 10)}
    # When one call is answered and the run resumes
    ok, kicks = runtime.calls.settle(taken["a"].call_id, taken["a"].token, {"v": "a"}, 1)
    assert ok
    for kick in kicks:
        runtime.kicker.kick(kick)
    drain(runtime)
    # Then the counter stays: the gateway that settled it knows
    assert _status(runtime, first) == "completed"
    assert runtime.calls.stops() == before
    # When the other run is cancelled while its call is made
    ok, _ = runtime.ledger.request_cancel(second, "stop", runtime.now_ms())
    assert ok
    # Then the counter moves, so the gateways renew their calls and learn to abort it
    assert runtime.calls.stops() == before + 1


def test_a_retry_makes_a_new_call_even_after_a_step_run_inside_the_step(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a step whose function runs a step of its own before it offloads its call
    @function(id="nested", trigger=event("app/nested"), registry=registry, retries=2)
    def nested(ctx: Context) -> Any:
        def ask() -> Any:
            # a step that runs for real on each try (its try count 0) before the call
            ctx.step.run(f"inner{ctx.attempt}", lambda: 1)
            outcome = ctx.step.offload("echo", "{}")
            if "e" in outcome:
                raise RuntimeError(outcome["e"])
            return outcome["v"]

        return ctx.step.run("ask", ask)

    runtime.register_functions()
    answers = iter([{"e": "overloaded"}, {"v": "ok"}])
    runtime.call_servers.append(lambda: _answer_all(runtime, lambda req: next(answers)))
    run_id = publish({"name": "app/nested"}, runtime=runtime).run_ids[0]
    # When the first call fails and the retry comes due
    drain(runtime)
    clock.advance(60)
    drain(runtime)
    # Then the retry asked for a new call, and completed with its answer
    assert _status(runtime, run_id) == "completed"
    record = runtime.ledger.run(run_id)
    assert record is not None and record.result == "ok"


def _woken(runtime: Runtime, while_waiting: Callable[[], object] | None = None) -> bool:
    """Whether a gateway waiting for `echo` calls got a wake token: while `while_waiting`
    runs (waiting far longer than a test may take), or, with None, just now."""

    async def wait() -> bool:
        assert runtime.aredis_factory is not None, "the test runtime gives async clients"
        board = AsyncCallBoard(runtime.aredis_factory(), runtime.keys)
        try:
            waiting = asyncio.create_task(board.wait("echo", 3600 if while_waiting else 0.01))
            if while_waiting is not None:  # on the blocking client, in a thread, as a worker
                await asyncio.to_thread(while_waiting)
            return await asyncio.wait_for(waiting, 10)
        finally:
            await board.aclose()

    return asyncio.run(wait())


def test_a_gateway_waiting_for_calls_is_woken_by_a_parked_call(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a function that offloads a call
    _asker(registry, [])
    runtime.register_functions()

    def park() -> None:
        publish({"name": "app/ask", "data": {"q": "x"}}, runtime=runtime)
        drain(runtime)

    # When a run parks on its call while a gateway waits for calls (an hour at most)
    # Then the wait ends with a token, and the call is there to take
    assert _woken(runtime, park) is True
    assert len(runtime.calls.take("echo", "gw", runtime.now_ms(), LEASE_MS, 10)) == 1


def test_wake_tokens_stand_for_calls_left_to_take(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given three calls parked, and a gateway with room for two
    _asker(registry, [])
    runtime.register_functions()
    for q in "abc":
        publish({"name": "app/ask", "data": {"q": q}}, runtime=runtime)
    drain(runtime)
    held = runtime.calls.take("echo", "gw-1", runtime.now_ms(), LEASE_MS, 2)
    # Then a token is left for another gateway, for the third call
    assert len(held) == 2 and _woken(runtime) is True
    # When that one takes it, no token is left: an idle gateway is not woken for nothing
    assert len(runtime.calls.take("echo", "gw-2", runtime.now_ms(), LEASE_MS, 2)) == 1
    assert _woken(runtime) is False
    # When the first gateway hands its calls back (it stops), a gateway is woken for them
    runtime.calls.keep("echo", runtime.now_ms(), 0, [(c.call_id, c.token) for c in held])
    assert _woken(runtime) is True
    assert len(runtime.calls.take("echo", "gw-2", runtime.now_ms(), LEASE_MS, 5)) == 2


def test_a_step_that_checked_for_its_outcome_does_not_read_it_again_to_park(
    runtime: Runtime, registry: FunctionRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a step that looks for its call's outcome first (as a turn's think does) and
    # offloads the call when there is none, and a count of the outcome's reads
    reads: list[str] = []
    outcome = runtime.calls.outcome

    def counted(call_id: str) -> Any:
        reads.append(call_id)
        return outcome(call_id)

    monkeypatch.setattr(runtime.calls, "outcome", counted)

    @function(id="checker", trigger=event("app/check"), registry=registry)
    def checker(ctx: Context) -> Any:
        def ask() -> Any:
            found = ctx.step.offload_outcome()
            return (found or ctx.step.offload("echo", json.dumps({"q": "hi"})))["v"]

        return ctx.step.run("ask", ask)

    runtime.register_functions()
    run_id = publish({"name": "app/check"}, runtime=runtime).run_ids[0]
    # When it runs up to its call, and again once a gateway answered
    drain(runtime)
    parked_after = len(reads)
    assert _answer_all(runtime, lambda request: {"v": "answer to " + request["q"]}) == 1
    drain(runtime)
    # Then the first execution read the outcome once, the resumed one once, and it completed
    assert parked_after == 1, reads
    assert len(reads) == 2, reads
    record = runtime.ledger.run(run_id)
    assert record is not None and record.result == "answer to hi"
