"""One run per key, and what a newer event does in each mode. No event is ever lost."""

from __future__ import annotations

from typing import Any

from harness.events import FUNCTION_CANCELLED
from harness.runtime import Concurrency, Context, Runtime, Singleton, event, function, publish
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry, SingletonMode
from harness.runtime.testing import drain
from tests.runtime_fixtures import ManualClock


def _message(runtime: Runtime, text: str, session: str = "s1") -> str:
    result = publish(
        {"name": "app/msg", "data": {"text": text, "session": session}}, runtime=runtime
    )
    return result.run_ids[0]


def _declare(
    registry: FunctionRegistry,
    mode: SingletonMode,
    seen: list[Any],
    during_first: list[str],
    runtime: Runtime,
) -> None:
    """A chat-like function: on its first message it receives `during_first` mid-run."""

    @function(
        id="chat",
        trigger=event("app/msg"),
        singleton=Singleton(key="event.data.session", mode=mode),
        registry=registry,
    )
    def chat(ctx: Context) -> None:
        text = ctx.event.data["text"]
        ctx.step.run("think", lambda: None)
        if text == "first":
            for later in during_first:
                # another message arrives and some worker picks it up while we run
                advance(runtime, _message(runtime, later))
        ctx.step.run("act", lambda: None)
        steering = [e.data["text"] for e in ctx.step.take_inbox()]
        ctx.step.run("reply", lambda: seen.append((text, steering)))

    runtime.register_functions()


def test_steer_hands_new_messages_to_the_running_run(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    seen: list[Any] = []
    _declare(registry, "steer", seen, ["second", "third"], runtime)
    first = _message(runtime, "first")
    drain(runtime)
    assert seen == [("first", ["second", "third"])], "one run must see both messages, in order"
    statuses = [r.status for r in runtime.ledger.recent(10)]
    assert statuses.count("completed") == 3
    assert runtime.ledger.run(first).status == "completed"  # type: ignore[union-attr]


def test_cancel_stops_the_running_run_and_the_new_one_handles_the_message(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    seen: list[Any] = []
    cancelled: list[str] = []

    @function(id="watch", trigger=event(FUNCTION_CANCELLED), registry=registry)
    def watch(ctx: Context) -> None:
        cancelled.append(ctx.event.data["run_id"])

    _declare(registry, "cancel", seen, ["second", "third"], runtime)
    first = _message(runtime, "first")
    drain(runtime)
    assert runtime.ledger.run(first).status == "cancelled"  # type: ignore[union-attr]
    assert cancelled == [first]
    assert seen == [("second", ["third"])], "the newest run must see every later message"


def test_queue_runs_one_after_another_in_arrival_order(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    seen: list[Any] = []
    _declare(registry, "queue", seen, ["second", "third"], runtime)
    _message(runtime, "first")
    drain(runtime)
    assert seen == [("first", []), ("second", []), ("third", [])]


def test_steered_messages_left_untaken_run_afterwards(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    seen: list[str] = []

    @function(
        id="deaf",
        trigger=event("app/msg"),
        singleton=Singleton(key="event.data.session", mode="steer"),
        registry=registry,
    )
    def deaf(ctx: Context) -> None:
        if ctx.event.data["text"] == "first":
            advance(runtime, _message(runtime, "second"))
        ctx.step.run("reply", lambda: seen.append(ctx.event.data["text"]))

    runtime.register_functions()
    _message(runtime, "first")
    drain(runtime)
    assert seen == ["first", "second"], "a message the holder never took must not be lost"


def test_different_keys_do_not_block_each_other(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    order: list[str] = []

    @function(
        id="per-session",
        trigger=event("app/msg"),
        singleton=Singleton(key="event.data.session", mode="queue"),
        registry=registry,
    )
    def per_session(ctx: Context) -> None:
        if ctx.event.data["text"] == "a":
            assert advance(runtime, _message(runtime, "b", session="s2")) == "completed"
        order.append(ctx.event.data["text"])

    runtime.register_functions()
    _message(runtime, "a", session="s1")
    drain(runtime)
    assert order == ["b", "a"]


def test_crashed_holder_does_not_wedge_the_key(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    seen: list[str] = []
    crash = {"armed": True}

    class Killed(BaseException):
        pass

    @function(
        id="fragile",
        trigger=event("app/msg"),
        singleton=Singleton(key="event.data.session", mode="queue"),
        registry=registry,
    )
    def fragile(ctx: Context) -> None:
        ctx.step.run("seen", lambda: seen.append(ctx.event.data["text"]))
        if crash["armed"]:
            crash["armed"] = False
            raise Killed()

    runtime.register_functions()
    _message(runtime, "first")
    try:
        drain(runtime)
    except Killed:
        pass
    _message(runtime, "second")
    drain(runtime)
    assert seen == ["first"], "the second message must wait while the holder's lease lives"
    clock.advance(runtime.lease_ttl + 1)
    drain(runtime)
    assert seen == ["first", "second"]


def test_concurrency_limit_defers_runs_beyond_the_limit(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    outcomes: list[str] = []

    @function(
        id="limited",
        trigger=event("app/job"),
        concurrency=[Concurrency(key="event.data.team", limit=1)],
        registry=registry,
    )
    def limited(ctx: Context) -> None:
        if ctx.event.data["n"] == 1:
            other = publish({"name": "app/job", "data": {"team": "t", "n": 2}}, runtime=runtime)
            outcomes.append(advance(runtime, other.run_ids[0]))
            third = publish({"name": "app/job", "data": {"team": "u", "n": 3}}, runtime=runtime)
            outcomes.append(advance(runtime, third.run_ids[0]))
        ctx.step.run("work", lambda: outcomes.append(f"ran {ctx.event.data['n']}"))

    runtime.register_functions()
    publish({"name": "app/job", "data": {"team": "t", "n": 1}}, runtime=runtime)
    drain(runtime)
    clock.advance(1)
    drain(runtime)
    # run 2 (same team) was deferred while run 1 held the only slot; run 3 (other team) ran
    assert outcomes == ["throttled", "ran 3", "completed", "ran 1", "ran 2"]
