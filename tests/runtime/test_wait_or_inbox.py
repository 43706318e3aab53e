"""A wait a steering message may end (`wait_for_event_or_inbox`), and a cancel that wakes a
waiting run: what a chat turn waiting for a person's approval relies on."""

from __future__ import annotations

from typing import Any

from harness.runtime import Context, Runtime, Singleton, event, function, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import kick_all
from harness.runtime.testing import drain

CHAT = Singleton(key="event.data.chat", mode="steer")


def _status(runtime: Runtime, run_id: str) -> str:
    record = runtime.ledger.run(run_id)
    assert record is not None, f"run {run_id} has no record"
    return record.status


def test_steering_message_ends_a_wait_that_allows_it(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    seen: list[Any] = []

    @function(id="asker", trigger=event("app/msg"), singleton=CHAT, registry=registry)
    def asker(ctx: Context) -> None:
        woken = ctx.step.wait_for_event_or_inbox("answer", event="app/answer", timeout="1h")
        seen.append((woken.event, woken.by_inbox))
        seen.append([e.data["text"] for e in ctx.step.take_inbox()])

    runtime.register_functions()
    # Given a run waiting in its chat
    run_id = publish({"name": "app/msg", "data": {"chat": "c", "text": "go"}}, runtime=runtime)
    drain(runtime)
    assert _status(runtime, run_id.run_ids[0]) == "waiting"
    # When another message of the chat arrives (steer mode hands it to the run)
    publish({"name": "app/msg", "data": {"chat": "c", "text": "wait, what?"}}, runtime=runtime)
    drain(runtime)
    # Then the wait ended by the inbox, and the run took the message
    assert seen == [(None, True), ["wait, what?"]]
    assert _status(runtime, run_id.run_ids[0]) == "completed"


def test_steering_message_does_not_end_a_plain_wait(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    @function(id="plain", trigger=event("app/msg"), singleton=CHAT, registry=registry)
    def plain(ctx: Context) -> None:
        ctx.step.wait_for_event("answer", event="app/answer", timeout="1h")

    runtime.register_functions()
    # Given a run in a plain wait
    first = publish({"name": "app/msg", "data": {"chat": "c"}}, runtime=runtime).run_ids[0]
    drain(runtime)
    # When another message of the chat arrives
    publish({"name": "app/msg", "data": {"chat": "c"}}, runtime=runtime)
    drain(runtime)
    # Then it still waits for its event
    assert _status(runtime, first) == "waiting"


def test_cancel_wakes_a_waiting_run_which_stops(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    @function(id="stuck", trigger=event("app/go"), registry=registry)
    def stuck(ctx: Context) -> None:
        ctx.step.wait_for_event("answer", event="app/answer", timeout="30m")

    runtime.register_functions()
    # Given a run waiting half an hour for an event
    run_id = publish({"name": "app/go"}, runtime=runtime).run_ids[0]
    drain(runtime)
    assert _status(runtime, run_id) == "waiting"
    # When it is cancelled (no time passes)
    live, kicks = runtime.ledger.request_cancel(run_id, "from a test", runtime.now_ms())
    assert live
    kick_all(runtime.kicker, kicks)
    drain(runtime)
    # Then it stopped at once instead of sleeping out its wait
    assert _status(runtime, run_id) == "cancelled"
