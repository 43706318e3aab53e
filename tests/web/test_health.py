"""`GET /healthz` reports Redis reachability (and what the fleet has) without leaking how to
reach it; `GET /readyz` says whether a worker is live to answer."""

from __future__ import annotations

from dataclasses import replace

from fastapi.testclient import TestClient

from harness.errors import ConfigurationError
from harness.runtime import Context, Runtime, event, function
from harness.runtime.functions import FunctionRegistry
from harness.runtime.presence import PRESENCE_TTL_S, beat
from harness.settings import Settings
from harness.web import create_app
from tests.runtime_fixtures import UNREACHABLE_REDIS_PASSWORD as REDIS_PASSWORD
from tests.runtime_fixtures import ManualClock


def test_healthz_is_ok_when_redis_answers_even_without_a_worker(client: TestClient) -> None:
    # Given Redis answers and no worker has beaten
    # When the health check runs
    response = client.get("/healthz")
    # Then it is green (webhooks are stored until a worker comes) and says there is no worker
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "redis": "ok", "workers": 0, "functions": 0}


def test_healthz_counts_live_workers_and_registered_functions(
    client: TestClient, runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given two registered functions and two live workers
    for name in ("a", "b"):
        function(id=name, trigger=event(f"test/{name}"), registry=registry)(_noop)
    runtime.register_functions()
    beat(replace(runtime, worker_id="w1"), "worker")
    beat(replace(runtime, worker_id="w2"), "worker")
    # When the health check runs
    body = client.get("/healthz").json()
    # Then the body counts them
    assert body == {"status": "ok", "redis": "ok", "workers": 2, "functions": 2}


def test_readyz_is_503_until_a_worker_is_live_then_200(
    client: TestClient, runtime: Runtime
) -> None:
    # Given no worker
    before = client.get("/readyz")
    assert before.status_code == 503, before.text
    assert before.json()["workers"] == 0
    # When a worker beats
    beat(runtime, "worker")
    # Then the fleet is ready
    after = client.get("/readyz")
    assert after.status_code == 200, after.text
    assert after.json() == {"status": "ready", "workers": 1}


def test_readyz_is_503_again_once_the_worker_stops_beating(
    client: TestClient, runtime: Runtime, clock: ManualClock
) -> None:
    # Given a worker that beat once
    beat(runtime, "worker")
    assert client.get("/readyz").status_code == 200
    # When its beat grows older than the presence TTL
    clock.advance(PRESENCE_TTL_S + 1)
    # Then the fleet is no longer ready
    assert client.get("/readyz").status_code == 503


def test_readyz_waits_for_a_worker_of_each_default_queue(
    client: TestClient, runtime: Runtime
) -> None:
    # Given a worker of the runs' queue alone (`harness up`'s, before its gateway's process)
    beat(runtime, "worker", ("harness",))
    # When readiness is asked
    waiting = client.get("/readyz")
    # Then the fleet waits for a worker that delivers the replies
    assert waiting.status_code == 503, waiting.text
    assert waiting.json() == {"status": "waiting for a worker of harness-delivery", "workers": 1}
    # And once one consumes the delivery queue, it is ready
    beat(replace(runtime, worker_id="gateway"), "worker", ("harness-delivery",))
    assert client.get("/readyz").json() == {"status": "ready", "workers": 2}


def test_readyz_does_not_count_a_scheduler_as_a_worker(
    client: TestClient, runtime: Runtime
) -> None:
    beat(runtime, "scheduler")
    assert client.get("/readyz").status_code == 503


def test_readyz_is_503_when_redis_is_unreachable(
    unreachable_runtime: Runtime, settings: Settings
) -> None:
    with TestClient(create_app(lambda: unreachable_runtime, settings)) as client:
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "degraded", "redis": "ConnectionError"}


def _noop(ctx: Context) -> None:
    return None


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
