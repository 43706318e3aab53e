"""Publishing: validation, idempotency by id, fan-out by trigger, and the events stream."""

from __future__ import annotations

import asyncio

import pytest

from harness.errors import InvalidEventError, InvalidFunctionError
from harness.events import MESSAGE_RECEIVED, SUBAGENT_SPAWN, MessageReceived
from harness.runtime import (
    Context,
    PublishResult,
    Runtime,
    Singleton,
    cron,
    event,
    function,
    publish,
)
from harness.runtime.bus import publish_async
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain


def test_duplicate_publish_of_an_event_id_runs_nothing_twice(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    calls: list[str] = []

    @function(id="count", trigger=event("app/paid"), registry=registry)
    def count(ctx: Context) -> None:
        calls.append(ctx.event.id)

    runtime.register_functions()
    first = publish({"name": "app/paid", "id": "inv-1"}, runtime=runtime)
    second = publish({"name": "app/paid", "id": "inv-1"}, runtime=runtime)
    drain(runtime)
    assert not first.duplicate and second.duplicate
    assert second.run_ids == ()
    assert calls == ["inv-1"]
    assert runtime.redis.xlen(runtime.keys.events) == 1


def test_publish_fans_out_by_name_glob_and_predicate(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    ran: list[str] = []

    @function(id="all-app", trigger=event("app/*"), registry=registry)
    def all_app(ctx: Context) -> None:
        ran.append("all-app")

    @function(
        id="pro-only",
        trigger=event("app/signup", if_="event.data.plan == 'pro'"),
        registry=registry,
    )
    def pro_only(ctx: Context) -> None:
        ran.append("pro-only")

    runtime.register_functions()
    publish({"name": "app/signup", "data": {"plan": "free"}}, runtime=runtime)
    drain(runtime)
    assert ran == ["all-app"]
    publish({"name": "app/signup", "data": {"plan": "pro"}}, runtime=runtime)
    drain(runtime)
    assert sorted(ran) == ["all-app", "all-app", "pro-only"]


def test_functions_registered_by_another_process_receive_events(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a spec written to Redis by "another process" (a second runtime on the same Redis)
    other = FunctionRegistry()

    @function(id="remote", trigger=event("app/ping"), registry=other)
    def remote(ctx: Context) -> None:
        return None

    Runtime(redis=runtime.redis, kicker=runtime.kicker, registry=other).register_functions()
    # When this process publishes
    result = publish({"name": "app/ping"}, runtime=runtime)
    # Then a run is created for the remote function
    assert len(result.run_ids) == 1
    assert runtime.ledger.run(result.run_ids[0]).function_id == "remote"  # type: ignore[union-attr]


def test_a_function_registered_after_an_event_name_was_published_receives_it(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a name this process has published (so it knows which specs listen to it)
    @function(id="early", trigger=event("app/ping"), registry=registry)
    def early(ctx: Context) -> None:
        return None

    runtime.register_functions()
    first = publish({"name": "app/ping"}, runtime=runtime)
    # When another process registers a function for the same name, and later drops it
    other = FunctionRegistry()

    @function(id="late", trigger=event("app/*"), registry=other)
    def late(ctx: Context) -> None:
        return None

    remote = Runtime(redis=runtime.redis, kicker=runtime.kicker, registry=other)
    remote.register_functions()
    second = publish({"name": "app/ping"}, runtime=runtime)
    remote.triggers.unregister(["late"])
    third = publish({"name": "app/ping"}, runtime=runtime)
    # Then each publish starts the functions registered at its time
    functions = [
        sorted(runtime.ledger.run(r).function_id for r in result.run_ids)  # type: ignore[union-attr]
        for result in (first, second, third)
    ]
    assert functions == [["early"], ["early", "late"], ["early"]]


def test_builtin_event_with_the_wrong_shape_is_refused_and_nothing_is_recorded(
    runtime: Runtime,
) -> None:
    with pytest.raises(InvalidEventError) as info:
        publish({"name": MESSAGE_RECEIVED, "data": {"message": "hi"}}, runtime=runtime)
    assert "session_key" in str(info.value) and "sender" in str(info.value)
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_a_bad_nested_field_is_named_in_the_refusal(runtime: Runtime) -> None:
    # Given a sub-agent spawn whose reply target lacks its destination
    bad = {"name": SUBAGENT_SPAWN, "data": {"task": "t", "reply": {"channel": "telegram"}}}
    # When it is published, then the error names the event and the field
    with pytest.raises(InvalidEventError) as info:
        publish(bad, runtime=runtime)
    assert SUBAGENT_SPAWN in str(info.value) and "reply.destination" in str(info.value), info.value


def test_a_handler_reading_data_of_the_wrong_model_fails_at_once_with_a_clear_error(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a function with retries that reads its event as a chat message
    @function(id="reader", trigger=event("app/x"), retries=3, registry=registry)
    def reader(ctx: Context) -> str:
        return MessageReceived.from_event(ctx.event).message

    runtime.register_functions()
    # When an event of another shape reaches it
    run_id = publish({"name": "app/x", "data": {"text": "hi"}}, runtime=runtime).run_ids[0]
    drain(runtime)
    # Then the run failed on its first attempt, and the error names the event and the field
    record = runtime.ledger.run(run_id)
    assert record is not None and record.status == "failed" and record.attempt == 0, record
    assert "InvalidEventDataError" in record.error and "'app/x'" in record.error, record.error
    assert "session_key" in record.error, record.error


def test_malformed_event_names_are_refused(runtime: Runtime) -> None:
    with pytest.raises(InvalidEventError, match="event name"):
        publish({"name": "has spaces"}, runtime=runtime)
    with pytest.raises(InvalidEventError, match="data"):
        publish({"name": "app/x", "data": "not an object"}, runtime=runtime)


def test_invalid_declarations_fail_at_import_time() -> None:
    with pytest.raises(InvalidFunctionError, match="cron"):
        cron("61 * * * *")
    with pytest.raises(InvalidFunctionError, match="time zone"):
        cron("0 9 * * *", tz="Mars/Olympus")
    with pytest.raises(InvalidFunctionError, match="predicate"):
        event("app/x", if_="event.data.a ==")
    with pytest.raises(InvalidFunctionError, match="key path"):
        function(id="bad-key", trigger=event("app/x"), singleton=Singleton(key="data.session"))


def test_publish_async_records_fans_out_and_wakes_like_publish(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a function, and a run waiting for an approval of order 7
    got: list[object] = []

    @function(id="count", trigger=event("app/paid"), registry=registry)
    def count(ctx: Context) -> None:
        got.append(ctx.event.id)

    @function(id="approver", trigger=event("app/ordered"), registry=registry)
    def approver(ctx: Context) -> None:
        answer = ctx.step.wait_for_event(
            "ok", event="app/approved", match="data.order", timeout="1h"
        )
        got.append(answer.data if answer else None)

    runtime.register_functions()
    publish({"name": "app/ordered", "data": {"order": 7}}, runtime=runtime)
    drain(runtime)

    # When events are published from an event loop, one of them twice
    async def publish_all() -> list[PublishResult]:
        return [
            await publish_async({"name": "app/paid", "id": "inv-1"}, runtime=runtime),
            await publish_async({"name": "app/paid", "id": "inv-1"}, runtime=runtime),
            await publish_async({"name": "app/approved", "data": {"order": 7}}, runtime=runtime),
        ]

    first, again, _ = asyncio.run(publish_all())
    drain(runtime)
    # Then they were recorded once, ran their function, and woke the waiting run
    assert not first.duplicate and again.duplicate and len(first.run_ids) == 1
    assert got == ["inv-1", {"order": 7}]
    assert runtime.redis.xlen(runtime.keys.events) == 3
