"""A run whose execution ends right after its event started runs on its queue goes on with them
on the same thread (`executor.advance`), with no kick through the broker; a run that goes on
sends their kicks at its next step; a held kick its worker never got to is a lost kick."""

from __future__ import annotations

import pytest

from harness.runtime import Context, Runtime, Singleton, event, function, publish
from harness.runtime.bus import run_id_for
from harness.runtime.executor import MAX_CONTINUED, advance
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import KickHold, RecordingKicker
from harness.runtime.scheduler import reap_once
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock


def _kicker(runtime: Runtime) -> RecordingKicker:
    assert isinstance(runtime.kicker, RecordingKicker)
    return runtime.kicker


def _status(runtime: Runtime, run_id: str) -> str:
    record = runtime.ledger.run(run_id)
    assert record is not None
    return record.status


def _register_reply_chain(registry: FunctionRegistry, runtime: Runtime) -> list[str]:
    """`turn` sends `app/reply` as its last step; `deliver` answers it. Returns the order in
    which their bodies ran."""
    ran: list[str] = []

    @function(id="turn", trigger=event("app/message"), registry=registry)
    def turn(ctx: Context) -> str:
        ran.append("turn")
        ctx.step.send_event("reply", {"name": "app/reply", "data": {"text": "hi"}})
        return "answered"

    @function(id="deliver", trigger=event("app/reply"), registry=registry)
    def deliver(ctx: Context) -> str:
        ran.append("deliver")
        return str(ctx.event.data["text"])

    runtime.register_functions()
    return ran


def test_a_run_that_ends_with_an_event_goes_on_with_the_run_it_started_without_a_kick(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a turn whose last step publishes its reply, delivered by a function of its own
    ran = _register_reply_chain(registry, runtime)
    kick = _kicker(runtime)
    turn_id = publish({"name": "app/message"}, runtime=runtime).run_ids[0]
    first = kick.pending.popleft()
    # When one worker thread takes the turn's kick
    assert advance(runtime, first.run_id, first.seq) == "completed"
    # Then the delivery ran right after it on the same call, and no kick went to the broker
    assert ran == ["turn", "deliver"]
    assert kick.pending == type(kick.pending)(), f"kicks sent: {list(kick.pending)}"
    deliver_id = run_id_for("deliver", f"{turn_id}:reply:0")
    assert _status(runtime, turn_id) == "completed"
    assert _status(runtime, deliver_id) == "completed"
    # And its kick is no longer outstanding: the scheduler sends nothing later
    assert runtime.redis.zscore(f"{runtime.keys.prefix}:q:kicked", deliver_id) is None


def test_a_run_that_goes_on_after_its_event_sends_the_kick_at_its_next_step(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run that publishes an event, then sleeps
    started: list[str] = []

    @function(id="notify-then-sleep", trigger=event("app/go"), registry=registry)
    def notify_then_sleep(ctx: Context) -> str:
        ctx.step.send_event("note", {"name": "app/note"})
        ctx.step.sleep("later", 3600)
        return "done"

    @function(id="on-note", trigger=event("app/note"), registry=registry)
    def on_note(ctx: Context) -> str:
        started.append(ctx.run_id)
        return "noted"

    runtime.register_functions()
    publish({"name": "app/go"}, runtime=runtime)
    first = _kicker(runtime).pending.popleft()
    # When a worker advances it until it parks on its sleep
    assert advance(runtime, first.run_id, first.seq) == "suspended"
    # Then the event's run was not run on that thread: its kick went to the broker when the
    # sleep began, for any worker to take
    assert started == []
    (sent,) = _kicker(runtime).pending
    assert drain(runtime) == [(sent.run_id, "completed")]
    assert started == [sent.run_id]


def test_a_held_kick_whose_worker_died_is_sent_again_by_the_scheduler(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a delivery run whose kick was held by a worker that died before going on with it
    # (the publish's kicks taken and dropped)
    _register_reply_chain(registry, runtime)
    dropped: list[object] = []
    reply = {"name": "app/reply", "data": {"text": "hi"}}
    hold = KickHold("harness", dropped.extend)
    deliver_id = publish(reply, runtime=runtime, hold=hold).run_ids[0]
    assert len(dropped) == 1 and not _kicker(runtime).pending
    # When the scheduler reaps for a few seconds
    for _ in range(4):
        clock.advance(1)
        reap_once(runtime)
    # Then it sent the kick as a lost one, and the run is delivered
    assert [k.run_id for k in _kicker(runtime).pending] == [deliver_id]
    assert drain(runtime) == [(deliver_id, "completed")]


@pytest.mark.parametrize("stopping", [False, True])
def test_a_chain_longer_than_the_limit_or_a_stopping_worker_kicks_the_rest(
    runtime: Runtime, registry: FunctionRegistry, stopping: bool
) -> None:
    # Given a chain of runs, each of which ends by publishing the event of the next (with
    # `stopping`, the worker is told to stop while it runs the first)
    length = MAX_CONTINUED + 3
    ran: list[int] = []

    @function(id="link", trigger=event("app/link"), registry=registry)
    def link(ctx: Context) -> int:
        n = int(ctx.event.data["n"])
        ran.append(n)
        if stopping and n == 0:
            runtime.stopping.set()
        if n < length:
            ctx.step.send_event("next", {"name": "app/link", "data": {"n": n + 1}})
        return n

    runtime.register_functions()
    publish({"name": "app/link", "data": {"n": 0}}, runtime=runtime)
    first = _kicker(runtime).pending.popleft()
    # When one worker thread advances the first
    assert advance(runtime, first.run_id, first.seq) == "completed"
    # Then it went on with MAX_CONTINUED runs of the chain (none when stopping), and the next
    # one's kick went to the broker
    assert ran == ([0] if stopping else list(range(MAX_CONTINUED + 1)))
    assert len(_kicker(runtime).pending) == 1
    # And the whole chain still runs, each link once
    runtime.stopping.clear()
    drain(runtime)
    assert ran == list(range(length + 1))


def test_a_parent_that_invokes_a_child_and_parks_is_resumed_on_the_same_thread(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a parent that invokes a child and waits for its result
    @function(id="parent", trigger=event("app/ask"), registry=registry)
    def parent(ctx: Context) -> str:
        return "child said " + str(ctx.step.invoke("ask", "child", {"q": "?"}))

    @function(id="child", trigger=event("app/never"), registry=registry)
    def child(ctx: Context) -> str:
        return "yes"

    runtime.register_functions()
    parent_id = publish({"name": "app/ask"}, runtime=runtime).run_ids[0]
    first = _kicker(runtime).pending.popleft()
    # When one worker thread takes the parent's kick
    advance(runtime, first.run_id, first.seq)
    # Then the child ran and the parent resumed with its answer on that call, with no kick
    # through the broker
    record = runtime.ledger.run(parent_id)
    assert record is not None and record.status == "completed", record
    assert record.result == "child said yes"
    assert not _kicker(runtime).pending, list(_kicker(runtime).pending)


def test_the_next_run_of_a_singleton_queue_goes_on_when_the_first_ends(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given two messages of one chat, queued one after the other
    ran: list[str] = []

    @function(
        id="chat-turn",
        trigger=event("app/said"),
        registry=registry,
        singleton=Singleton(key="event.data.chat", mode="queue"),
    )
    def chat_turn(ctx: Context) -> str:
        ran.append(str(ctx.event.data["text"]))
        return "ok"

    runtime.register_functions()
    for text in ("one", "two"):
        publish({"name": "app/said", "data": {"chat": "c1", "text": text}}, runtime=runtime)
    (first,) = _kicker(runtime).pending  # the second waits for the first to end
    _kicker(runtime).pending.clear()
    # When a worker thread runs the first
    advance(runtime, first.run_id, first.seq)
    # Then the second ran right after it on that call, in order, with no kick through the
    # broker
    assert ran == ["one", "two"]
    assert not _kicker(runtime).pending, list(_kicker(runtime).pending)
