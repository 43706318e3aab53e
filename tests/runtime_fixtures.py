"""Pytest plugin: a runtime on fakeredis with a hand-driven clock, for unit tests."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import fakeredis
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from harness.composition import extend_runtime
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker


@dataclass
class ManualClock:
    """A clock that only moves when told to."""

    now: float = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def registry() -> FunctionRegistry:
    return FunctionRegistry()


@pytest.fixture
def runtime(clock: ManualClock, registry: FunctionRegistry) -> Iterator[Runtime]:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    rt = Runtime(
        redis=client,
        aredis=fakeredis.FakeAsyncRedis(server=server, decode_responses=True),
        aredis_factory=lambda: fakeredis.FakeAsyncRedis(server=server, decode_responses=True),
        kicker=RecordingKicker(),
        registry=registry,
        clock=clock,
        retry_backoff=1.0,
        lease_ttl=10.0,
    )
    yield extend_runtime(rt)  # the fleet's runtime: what the product adds to the engine's
    client.flushall()


UNREACHABLE_REDIS_PASSWORD = "redis-hunter2"


@pytest.fixture
def unreachable_runtime(registry: FunctionRegistry) -> Iterator[Runtime]:
    """A runtime whose Redis client (with a password) points at a closed port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = redis.Redis(
        host="127.0.0.1",
        port=port,
        password=UNREACHABLE_REDIS_PASSWORD,
        socket_connect_timeout=1,
        retry=Retry(NoBackoff(), 0),
    )
    yield Runtime(redis=client, kicker=RecordingKicker(), registry=registry)
    client.close()
