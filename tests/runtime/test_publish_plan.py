"""A publish is one round trip: planned from what the publisher last read, checked by the
publish script, which also pushes the kicks onto the broker. A plan gone stale (functions
registered, waiters on a new path) is made again, never recorded wrong."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from kombu import Connection

from harness.runtime import Context, Runtime, event, function, publish
from harness.runtime.bus import publish_async, run_id_for
from harness.runtime.celery_app import CeleryKicker, configure, kick_message
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry, Singleton
from harness.runtime.keys import Keys
from harness.runtime.kicker import Kick, KickHold
from harness.runtime.testing import drain


class CountingRedis(redis.Redis):
    """A real client that counts the commands it sends (a script call is one)."""

    sent: list[str]

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent.append(str(args[0]))
        return super().execute_command(*args, **options)


@pytest.fixture
def counting(redis_url: str) -> Iterator[CountingRedis]:
    client = CountingRedis.from_url(redis_url, decode_responses=True)
    client.sent = []
    client.flushdb()  # the broker's queue may hold other tests' kicks
    client.sent.clear()
    yield client
    client.flushdb()
    client.close()


def _ping_function(registry: FunctionRegistry) -> None:
    @function(id="pinged", trigger=event("app/ping"), registry=registry)
    def pinged(ctx: Context) -> None:
        return None


def test_a_publish_with_a_current_plan_is_one_round_trip(
    counting: CountingRedis, registry: FunctionRegistry
) -> None:
    # Given a publisher that has published the name once (and so knows the table and paths)
    _ping_function(registry)
    runtime = Runtime(redis=counting, kicker=CeleryKicker(in_script=True), registry=registry)
    runtime.register_functions()
    publish({"name": "app/ping"}, runtime=runtime)
    counting.sent.clear()

    # When it publishes again
    result = publish({"name": "app/ping"}, runtime=runtime)

    # Then that took one command, which created the run and queued its kick on the broker
    assert counting.sent == ["EVALSHA"], counting.sent
    assert len(result.run_ids) == 1
    assert counting.llen("harness") == 2


def test_kicks_pushed_by_the_script_are_messages_kombu_decodes(
    redis_url: str, counting: CountingRedis, registry: FunctionRegistry
) -> None:
    # Given a runtime whose kicks the publish script pushes onto the broker (this Redis)
    _ping_function(registry)
    runtime = Runtime(
        redis=counting, kicker=CeleryKicker(in_script=True), registry=registry, keys=Keys("pp")
    )
    runtime.register_functions()

    # When an event creates a run
    run_id = publish({"name": "app/ping"}, runtime=runtime).run_ids[0]

    # Then kombu reads a `harness.kick` message for that run and its kick number off the queue
    seq = int(counting.hget(runtime.keys.run(run_id), "kick_seq") or 0)
    with Connection(redis_url) as conn:
        queue = conn.SimpleQueue("harness", no_ack=True)
        message = queue.get(timeout=5)
        assert message.headers["task"] == "harness.kick"
        assert message.payload[0] == [run_id, seq], message.payload
        assert message.delivery_info["routing_key"] == "harness"
        queue.close()
    assert seq == 1


def test_a_front_kick_is_the_next_message_kombu_delivers(
    redis_url: str, counting: CountingRedis
) -> None:
    # Given two kicks waiting in a queue, sent the ordinary way
    kicker = CeleryKicker()
    configure(redis_url)
    kicker.kick(Kick("r-first", "front-q", 1))
    kicker.kick(Kick("r-second", "front-q", 2))

    # When a recovered run's kick is sent to the front
    kicker.kick(Kick("r-recovered", "front-q", 0, front=True))

    # Then kombu delivers it first, then the others in their order
    with Connection(redis_url) as conn:
        queue = conn.SimpleQueue("front-q", no_ack=True)
        taken = [queue.get(timeout=5).payload[0][0] for _ in range(3)]
        queue.close()
    assert taken == ["r-recovered", "r-first", "r-second"]


def test_kick_message_fills_the_same_template_as_the_scripts() -> None:
    # Given a kick to an unusual queue name
    kick = Kick("rabc", 'q"uoted%', 7)

    # When the kicker renders it itself
    message = json.loads(kick_message(kick))

    # Then it is valid JSON naming the run, its number and the queue, with a JSON body
    assert json.loads(message["body"])[0] == ["rabc", 7]
    assert message["properties"]["delivery_info"]["routing_key"] == 'q"uoted%'
    assert message["headers"]["id"] == message["properties"]["delivery_tag"]


def test_a_waiter_on_a_path_the_publisher_has_not_seen_wakes(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a publisher that published `app/approved` while nobody waited for it
    got: list[Any] = []

    @function(id="approver", trigger=event("app/created"), registry=registry)
    def approver(ctx: Context) -> None:
        answer = ctx.step.wait_for_event("ok", event="app/approved", match="data.n", timeout="1h")
        got.append(answer.data["n"] if answer else None)

    runtime.register_functions()
    publish({"name": "app/approved", "data": {"n": 1}}, runtime=runtime)
    assert runtime.waiter_paths.of("app/approved") == ()
    # and then a run started waiting on the path `data.n`
    publish({"name": "app/created", "data": {"n": 1}}, runtime=runtime)
    drain(runtime)

    # When the approval is published with the publisher's old plan
    publish({"name": "app/approved", "data": {"n": 1}}, runtime=runtime)
    drain(runtime)

    # Then the script refused the stale plan, the publisher learnt the path, and the run woke
    assert runtime.waiter_paths.of("app/approved") == ("data.n",)
    assert got == [1]


def test_functions_registered_after_a_publish_receive_the_next_event(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a publisher whose trigger table was read before a function was registered
    publish({"name": "app/ping"}, runtime=runtime)
    other = FunctionRegistry()
    _ping_function(other)
    Runtime(redis=runtime.redis, kicker=runtime.kicker, registry=other).register_functions()

    # When it publishes from its event loop
    result = asyncio.run(publish_async({"name": "app/ping"}, runtime=runtime))

    # Then the new function got its run: the stale table was reloaded, not used
    assert len(result.run_ids) == 1
    assert runtime.ledger.run(result.run_ids[0]).function_id == "pinged"  # type: ignore[union-attr]


def test_a_stopping_worker_sends_the_next_runs_kick_onto_the_broker(
    redis_url: str, counting: CountingRedis, registry: FunctionRegistry
) -> None:
    # Given two runs of one chat (a singleton), the second queued behind the first, on a
    # runtime whose kicks go to the broker (this Redis), and a worker told to stop while it
    # runs the first (so it does not go on with the second itself)
    runtime = Runtime(redis=counting, kicker=CeleryKicker(in_script=True), registry=registry)

    @function(
        id="chat-turn",
        trigger=event("app/said"),
        singleton=Singleton(key="event.data.chat"),
        registry=registry,
    )
    def turn(ctx: Context) -> None:
        runtime.stopping.set()

    runtime.register_functions()
    first = publish({"name": "app/said", "data": {"chat": "c1"}}, runtime=runtime).run_ids[0]
    second = publish({"name": "app/said", "data": {"chat": "c1"}}, runtime=runtime).run_ids[0]
    counting.delete("harness")  # the kicks of the publishes

    # When the worker runs the first to its end
    assert advance(runtime, first) == "completed"

    # Then the second run's kick is on the broker, a message kombu decodes
    seq = int(counting.hget(runtime.keys.run(second), "kick_seq") or 0)
    with Connection(redis_url) as conn:
        queue = conn.SimpleQueue("harness", no_ack=True)
        message = queue.get(timeout=5)
        assert message.headers["task"] == "harness.kick"
        assert message.payload[0] == [second, seq], message.payload
        queue.close()
    assert seq > 0


class WatchedKicker(CeleryKicker):
    """A kicker whose kicks the scripts push (this Redis is the broker) and which notes every
    kick it is asked to send itself."""

    def __init__(self) -> None:
        super().__init__(in_script=True)
        self.sent: list[Kick] = []

    def kick(self, kick: Kick) -> None:
        self.sent.append(kick)
        super().kick(kick)


def _kick_on(redis_url: str, queue: str) -> list[object]:
    """The run id and kick number of the one kick message on `queue`, as kombu reads it."""
    with Connection(redis_url) as conn:
        simple = conn.SimpleQueue(queue, no_ack=True)
        message = simple.get(timeout=5)
        simple.close()
    assert message.headers["task"] == "harness.kick"
    return list(message.payload[0])


def test_a_held_publish_returns_the_kicks_on_its_queue_and_the_script_pushes_the_others(
    redis_url: str, counting: CountingRedis, registry: FunctionRegistry
) -> None:
    # Given an event that starts a run on the publisher's queue and one on another queue
    for fid, queue in (("here", "harness"), ("there", "elsewhere")):

        @function(id=fid, trigger=event("app/fan"), queue=queue, registry=registry)
        def handler(ctx: Context) -> None:
            return None

    kicker = WatchedKicker()
    runtime = Runtime(redis=counting, kicker=kicker, registry=registry)
    runtime.register_functions()
    publish({"name": "app/fan", "id": "warm-up"}, runtime=runtime)  # learns the table
    counting.delete("harness", "elsewhere")
    counting.sent.clear()

    # When a run publishes it holding the kicks on its own queue
    held: list[Kick] = []
    result = publish({"name": "app/fan"}, runtime=runtime, hold=KickHold("harness", held.extend))

    # Then, in one command, the kick on the other queue went onto the broker and the one on
    # the publisher's queue came back to be held, and nothing was sent through the kicker
    here, there = (run_id_for(f, result.event_id) for f in ("here", "there"))
    assert counting.sent == ["EVALSHA"], counting.sent
    assert [(k.run_id, k.queue) for k in held] == [(here, "harness")]
    assert counting.llen("harness") == 0 and kicker.sent == []
    seq = int(counting.hget(runtime.keys.run(there), "kick_seq") or 0)
    assert _kick_on(redis_url, "elsewhere") == [there, seq] and seq > 0


def test_a_finish_pushes_the_kick_of_a_parent_on_another_queue_itself(
    redis_url: str, counting: CountingRedis, registry: FunctionRegistry
) -> None:
    # Given a parent on another queue waiting for a child on the worker's queue
    @function(id="parent", trigger=event("app/parent"), queue="elsewhere", registry=registry)
    def parent(ctx: Context) -> object:
        return ctx.step.invoke("child", "child")

    @function(id="child", trigger=event("app/never"), registry=registry)
    def child(ctx: Context) -> str:
        return "done"

    kicker = WatchedKicker()
    runtime = Runtime(redis=counting, kicker=kicker, registry=registry)
    runtime.register_functions()
    parent_id = publish({"name": "app/parent"}, runtime=runtime).run_ids[0]
    assert advance(runtime, parent_id) == "suspended"
    (child_id,) = counting.zrange(runtime.keys.runs_of_parent(parent_id), 0, -1)
    counting.delete("harness", "elsewhere")

    # When a worker runs the child to its end
    assert advance(runtime, child_id) == "completed"

    # Then the finish script put the parent's kick onto its queue: the kicker sent nothing
    seq = int(counting.hget(runtime.keys.run(parent_id), "kick_seq") or 0)
    assert _kick_on(redis_url, "elsewhere") == [parent_id, seq]
    assert kicker.sent == []
