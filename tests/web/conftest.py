"""Fixtures for the web tests: the app on a runtime backed by fakeredis, and a client."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import fakeredis
import pytest
import redis
from fastapi.testclient import TestClient
from pydantic import SecretStr
from redis.backoff import NoBackoff
from redis.retry import Retry

from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.settings import Settings
from harness.web import create_app

API_KEY = "s3cret-api-key-0123456789"
REDIS_PASSWORD = "redis-hunter2"


@pytest.fixture
def registry() -> FunctionRegistry:
    return FunctionRegistry()


@pytest.fixture
def runtime(registry: FunctionRegistry) -> Iterator[Runtime]:
    client = fakeredis.FakeRedis(decode_responses=True)
    yield Runtime(redis=client, kicker=RecordingKicker(), registry=registry)
    client.flushall()


@pytest.fixture
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        harness_api_key=SecretStr(API_KEY),
        agent_workspace=tmp_path_factory.mktemp("workspace"),
    )


@pytest.fixture
def client(runtime: Runtime, settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(lambda: runtime, settings)) as test_client:
        yield test_client


@pytest.fixture
def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture
def unreachable_runtime(registry: FunctionRegistry) -> Iterator[Runtime]:
    """A runtime whose Redis client points at a closed port (and carries a password)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = redis.Redis(
        host="127.0.0.1",
        port=port,
        password=REDIS_PASSWORD,
        socket_connect_timeout=1,
        retry=Retry(NoBackoff(), 0),
    )
    yield Runtime(redis=client, kicker=RecordingKicker(), registry=registry)
    client.close()
