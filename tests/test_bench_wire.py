"""`bench/wire.py`: the wire floor replays the worker's own request and makes each Bot API
call it names, through the real clients against the fakes."""

from __future__ import annotations

import socket

import anthropic
import pytest

from bench.stats import listening_sockets
from bench.wire import WARM_UP, wire_floor
from harness.fleet.embedded_redis import free_port
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi


def test_the_wire_floor_replays_the_recorded_request_and_times_each_call() -> None:
    with ModelServer() as model, FakeTelegramApi() as telegram:
        # Given one Messages request a worker sent, and answers for the replays
        model.script(*[Reply.answer("pong") for _ in range(1 + 2 + WARM_UP)])
        sdk = anthropic.Anthropic(api_key=model.api_key, base_url=model.url)
        sdk.messages.create(
            model="claude-x", max_tokens=50, messages=[{"role": "user", "content": "ping"}]
        )
        original = model.requests[0].raw
        # When the wire floor is measured with two calls of each kind
        cost = wire_floor(model, telegram, calls=2)
        # Then the model saw that same request again for every call (and the warm-up)
        replays = [r.raw for r in model.requests[1:]]
        assert replays == [original] * (2 + WARM_UP)
        # And each Bot API call reached the fake as often, with a CPU time for every kind
        for method in ("sendChatAction", "sendMessageDraft", "sendMessage"):
            assert len(telegram.calls_to(method)) == 2 + WARM_UP, method
        assert set(cost) == {"model", "typing", "preview", "send"}
        assert all(ms > 0 for ms in cost.values()), cost


def test_the_wire_floor_needs_a_recorded_request() -> None:
    with ModelServer() as model, FakeTelegramApi() as telegram:
        with pytest.raises(LookupError, match="no Messages request"):
            wire_floor(model, telegram, calls=1)


def test_redis_commands_per_turn_are_counted_from_a_real_server(redis_url: str) -> None:
    import redis

    from bench.webhooks import commands_per_turn, redis_commands

    # Given a real Redis and a reading of its command counts
    store = redis.Redis.from_url(redis_url)
    before = redis_commands(store)
    # When two "turns" make 3 SETs and 1 HGETALL each
    for turn in range(2):
        for i in range(3):
            store.set(f"bench-wire-test:{turn}:{i}", "x", ex=60)
        store.hgetall("bench-wire-test:none")
    per_turn = commands_per_turn(before, redis_commands(store), turns=2)
    # Then each counts per turn, the largest first (INFO itself was called between readings)
    assert per_turn["set"] == 3.0 and per_turn["hgetall"] == 1.0
    assert next(iter(per_turn)) == "set"


def test_listening_sockets_counts_each_process_socket_on_a_port() -> None:
    port = free_port()
    sockets = []
    for _ in range(2):  # as two web processes bind it with SO_REUSEPORT
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", port))
        sockets.append(sock)
    try:
        assert listening_sockets(port) == 0  # bound, not listening yet
        sockets[0].listen()
        assert listening_sockets(port) == 1
        sockets[1].listen()
        assert listening_sockets(port) == 2
    finally:
        for sock in sockets:
            sock.close()
    assert listening_sockets(port) == 0
