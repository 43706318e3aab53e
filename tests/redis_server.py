"""pytest plugin: one real Redis server per test session, for integration tests.

redis_url     session-scoped URL of an embedded, non-persistent `redis-server`
redis_client  a client on it (decoded strings); FLUSHALL after each test
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from harness.fleet.embedded_redis import EmbeddedRedis


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real Redis started once for the session and stopped at its end."""
    with EmbeddedRedis(tmp_path_factory.mktemp("redis"), persist=False) as server:
        yield server.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client on the session's Redis; the database is flushed after each test."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        yield client
    finally:
        client.flushall()
        client.close()
