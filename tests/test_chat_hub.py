"""`ChatHub`: many chat exchanges waiting at once share one reader of the bus.

Against a real Redis (pub/sub, blocking stream reads and CLIENT LIST behave for real there),
nothing runs the messages: the test publishes the replies itself, as the agent would.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import fakeredis
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from harness.agent.progress import RUNNING, Progress, report
from harness.chat_client import (
    ChatFailedError,
    ChatReply,
    ChatSession,
    ChatUnavailableError,
    Exchange,
)
from harness.chat_hub import ChatHub, chat_route
from harness.errors import BusUnavailableError
from harness.events import FUNCTION_FAILED, REPLY_READY, Event
from harness.runtime import Runtime, publish
from harness.runtime.fanout import Fanout
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from tests.waiting import wait_until

EXCHANGES = 150
MAX_CLIENTS = 12
"""New connections the process may hold with every exchange waiting: the hub's two readers and
the few that sending borrowed (the pool keeps them), never one per exchange."""


@pytest.fixture
def real_runtime(redis_url: str, registry: FunctionRegistry) -> Iterator[Runtime]:
    """A runtime on the real Redis whose client does not retry by itself: a dropped
    connection reaches our readers as an error."""
    client = redis.Redis.from_url(redis_url, decode_responses=True, retry=Retry(NoBackoff(), 0))
    yield Runtime(redis=client, kicker=RecordingKicker(), registry=registry)
    client.flushall()
    client.close()


@pytest.fixture
def hub() -> Iterator[ChatHub]:
    chat_hub = ChatHub()
    yield chat_hub
    chat_hub.close()


def _reply(runtime: Runtime, session: str, text: str, channel: str = "api") -> None:
    data = {
        "response": text,
        "channel": channel,
        "destination": {"chat_id": session},
        "run_id": f"r-{session}",
    }
    publish(Event(name=REPLY_READY, data=data), runtime=runtime)


def _clients(redis_url: str) -> int:
    """Connections to the server, not counting the one asking."""
    with redis.Redis.from_url(redis_url) as probe:
        return len(probe.client_list()) - 1


def test_hub_answers_150_waiting_exchanges_on_a_bounded_number_of_connections(
    real_runtime: Runtime, hub: ChatHub, redis_url: str
) -> None:
    # Given the server's connections before (another test's may linger on the shared server)
    before = _clients(redis_url)

    # and 150 API chats sent through the hub, each then waiting for its reply in a thread
    def send(n: int) -> Exchange:
        chat = ChatSession(real_runtime, f"api-{n}", channel="api", feeds=hub, timeout=60)
        return chat.send(f"message {n}")

    with ThreadPoolExecutor(8) as senders:
        exchanges = list(senders.map(send, range(EXCHANGES)))
    replies: dict[str, str] = {}
    waiting = threading.Semaphore(0)

    def wait_for_reply(exchange: Exchange) -> None:
        waiting.release()
        for update in exchange.updates():
            if isinstance(update, ChatReply):
                replies[exchange.session_key] = update.response

    threads = [threading.Thread(target=wait_for_reply, args=(e,)) for e in exchanges]
    for thread in threads:
        thread.start()
    for _ in threads:
        waiting.acquire()
    # When the process's connections are counted with all of them open
    clients = _clients(redis_url) - before
    # and then the agent answers each
    for n in range(EXCHANGES):
        _reply(real_runtime, f"api-{n}", f"answer {n}")
    for thread in threads:
        thread.join(timeout=60)
    # Then the connections did not grow with the exchanges, and each got its own reply
    assert clients <= MAX_CLIENTS, f"{clients} connections for {EXCHANGES} waiting exchanges"
    assert replies == {f"api-{n}": f"answer {n}" for n in range(EXCHANGES)}


def test_hub_exchange_gets_its_own_progress_and_failure_only(
    real_runtime: Runtime, hub: ChatHub
) -> None:
    # Given an exchange through the hub, other chats' replies and progress, then its own
    exchange = ChatSession(real_runtime, "api-mine", channel="api", feeds=hub).send("hi")
    _reply(real_runtime, "api-theirs", "not yours")
    _reply(real_runtime, "api-mine", "wrong channel", channel="telegram")
    report(real_runtime, "api-theirs", "r-theirs", RUNNING, "bash")
    report(real_runtime, "api-mine", "r-mine", RUNNING, "ls")
    updates = exchange.updates()
    # Then it sees its own progress only
    first = next(updates)
    assert isinstance(first, Progress) and first.run_id == "r-mine", first
    # and when the run started by its message fails, it sees that failure
    failed = {"function_id": "f", "run_id": "r-mine", "event": {"id": exchange.event_id}}
    publish(Event(name=FUNCTION_FAILED, data={**failed, "error": "boom"}), runtime=real_runtime)
    with pytest.raises(ChatFailedError):
        next(updates)


def test_fanout_resumes_from_its_cursor_after_losing_its_connection(
    real_runtime: Runtime, redis_url: str
) -> None:
    # Given a fan-out reading the stream, with an inbox for one chat
    fanout = Fanout(real_runtime, chat_route, real_runtime.keys.progress_pattern(), retry_s=0.5)
    fanout.start()
    try:
        inbox = fanout.inbox({"chat\x00api\x00api-1"})
        # When every connection to Redis is dropped and the reader has noticed
        with redis.Redis.from_url(redis_url) as admin:
            admin.client_kill_filter(_type="normal", skipme=True)
            admin.client_kill_filter(_type="pubsub", skipme=True)
        wait_until(lambda: fanout.down, "the fan-out to notice it lost Redis")
        # and a reply is appended while it is away
        _reply(real_runtime, "api-1", "sent while the reader was away")
        # Then the reader comes back and reads on from where it was
        delivery = inbox.get(timeout=30)
        assert delivery is not None, "the reply appended during the outage was missed"
        assert delivery.payload["data"]["response"] == "sent while the reader was away"
        wait_until(lambda: not fanout.down, "the fan-out to be back")
    finally:
        fanout.stop()


def test_hub_exchange_reports_the_bus_unavailable_only_when_redis_is_down_at_its_deadline(
    registry: FunctionRegistry, hub: ChatHub
) -> None:
    # Given an exchange waiting through the hub on a Redis that then goes away
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    runtime = Runtime(redis=client, kicker=RecordingKicker(), registry=registry)
    exchange = ChatSession(runtime, "api-1", channel="api", feeds=hub, timeout=0.5).send("hi")
    server.connected = False
    wait_until(lambda: hub.down, "the hub to notice Redis is gone")
    # When its deadline passes with Redis still down
    # Then it reports the bus unavailable, not a timeout
    with pytest.raises(ChatUnavailableError):
        list(exchange.updates())


def test_hub_closed_at_shutdown_refuses_a_new_exchange_as_the_bus_unavailable(
    hub: ChatHub, registry: FunctionRegistry
) -> None:
    # Given a hub the web process closed while shutting down
    runtime = Runtime(
        redis=fakeredis.FakeRedis(decode_responses=True),
        kicker=RecordingKicker(),
        registry=registry,
    )
    hub.close()
    # When a request opens an exchange, then it is refused as a 503 is (never a 500)
    with pytest.raises(BusUnavailableError, match="shutting down"):
        hub.open(runtime, "s1", "api", "e1")
