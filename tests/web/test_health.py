"""`GET /healthz` reports Redis reachability without leaking how to reach it."""

from __future__ import annotations

from fastapi.testclient import TestClient

from harness.errors import ConfigurationError
from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import create_app
from tests.runtime_fixtures import UNREACHABLE_REDIS_PASSWORD as REDIS_PASSWORD


def test_healthz_is_ok_when_redis_answers(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "redis": "ok"}


def test_healthz_is_degraded_when_redis_is_unreachable(
    unreachable_runtime: Runtime, settings: Settings
) -> None:
    # Given an app whose Redis client points at a closed port
    port = str(unreachable_runtime.redis.connection_pool.connection_kwargs["port"])
    with TestClient(create_app(lambda: unreachable_runtime, settings)) as client:
        # When the health check runs
        response = client.get("/healthz")
    # Then it reports the error class only: no host, port or password
    assert response.status_code == 503
    assert response.json() == {"status": "degraded", "redis": "ConnectionError"}
    assert port not in response.text and REDIS_PASSWORD not in response.text


def test_healthz_is_degraded_when_no_redis_is_configured(settings: Settings) -> None:
    def no_redis() -> Runtime:
        raise ConfigurationError("REDIS_URL is not set")

    with TestClient(create_app(no_redis, settings)) as client:
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "degraded", "redis": "ConfigurationError"}
