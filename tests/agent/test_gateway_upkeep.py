"""The model gateway's upkeep: what it closes when it stops, and how it rides out a Redis that
does not answer."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from harness.agent.gateway import ModelGateway
from harness.agent.model_calls import MODEL_SERVICE, ModelCallRequest
from harness.llm.anthropic import AnthropicProvider
from harness.runtime import Runtime
from harness.runtime.call_health import calls_waiting
from harness.runtime.calls import GATEWAY_TTL_S
from tests.agent.conftest import make_settings
from tests.fakes.model_server import ModelServer
from tests.runtime_fixtures import ManualClock
from tests.waiting import wait_until


def test_a_stopped_gateway_closes_its_providers_sync_clients_too(
    runtime: Runtime, model_server: ModelServer, tmp_path: Path
) -> None:
    # Given a gateway that built a provider for a call, whose sync client was built too (a
    # provider builds it on its first blocking call)
    settings = make_settings(tmp_path / "workspace", model_server, model_calls="gateway")
    gateway = ModelGateway(runtime, settings)
    request = ModelCallRequest(
        run_id="r1", provider="anthropic", model="m", system=[], messages=[], tools=[]
    )
    provider = gateway._provider(request)
    assert isinstance(provider, AnthropicProvider)
    sync_client = provider._client.get()
    # When the gateway serves until idle, and so winds down
    gateway.serve_due()
    # Then the provider's sync client is closed as well as its async one
    assert sync_client.is_closed(), "the sync SDK client was left open"


def test_a_gateway_serving_until_idle_rides_out_a_redis_that_does_not_answer(
    unreachable_runtime: Runtime,
    model_server: ModelServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a gateway on a Redis that does not answer, serving until idle on a thread
    caplog.set_level(logging.WARNING, logger="harness.agent.gateway")
    settings = make_settings(tmp_path / "workspace", model_server, model_calls="gateway")
    gateway = ModelGateway(unreachable_runtime, settings)
    raised: list[BaseException] = []

    def serve() -> None:
        try:
            gateway.serve_due()
        except BaseException as exc:  # what the test is about: nothing should come out
            raised.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    # When its look for due calls fails too, and it is then stopped
    wait_until(lambda: gateway.failed >= 2 or raised, "two failed round trips")
    gateway.stop()
    thread.join(10)
    # Then serve did not raise: it logged and went round again until stopped
    assert raised == [], f"serve raised {raised!r}"
    assert not thread.is_alive()
    # And each failure is one warning saying why, not an error with a traceback: a Redis
    # outage is the operator's known condition, not a fault of the gateway
    failures = [r for r in caplog.records if "round trip failed" in r.getMessage()]
    assert failures, caplog.text
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in failures), [
        (r.levelname, r.exc_info) for r in failures
    ]
    assert "could not" in failures[0].getMessage(), failures[0].getMessage()


def test_a_serving_gateway_beats_and_one_that_stops_is_gone_at_once(
    runtime: Runtime, model_server: ModelServer, tmp_path: Path
) -> None:
    # Given a gateway serving on its thread
    settings = make_settings(tmp_path / "workspace", model_server, model_calls="gateway")
    gateway = ModelGateway(runtime, settings, poll_s=0.01)
    gateway.start()
    try:
        # Then it is seen alive
        wait_until(lambda: calls_waiting(runtime, MODEL_SERVICE).gateways == 1, "its beat")
    finally:
        # When it stops
        gateway.stop()
    # Then it is gone at once, not after its beat ages out
    assert calls_waiting(runtime, MODEL_SERVICE).gateways == 0


def test_a_dead_gateway_is_gone_once_its_beat_ages_out(
    runtime: Runtime, model_server: ModelServer, tmp_path: Path, clock: ManualClock
) -> None:
    # Given a gateway that beat, then died
    settings = make_settings(tmp_path / "workspace", model_server, model_calls="gateway")
    gateway = ModelGateway(runtime, settings, poll_s=0.01)
    gateway.start()
    wait_until(lambda: calls_waiting(runtime, MODEL_SERVICE).gateways == 1, "its beat")
    gateway.kill()
    # When its beat is older than the TTL
    clock.advance(GATEWAY_TTL_S + 1)
    # Then no gateway is alive
    assert calls_waiting(runtime, MODEL_SERVICE).gateways == 0


def test_a_gateway_draining_in_a_test_does_not_count_as_alive(
    runtime: Runtime, model_server: ModelServer, tmp_path: Path
) -> None:
    # Given a gateway serving until idle (drain's, the evals')
    settings = make_settings(tmp_path / "workspace", model_server, model_calls="gateway")
    # When it has served
    ModelGateway(runtime, settings).serve_due()
    # Then it never said it was alive: it is no fleet's gateway
    assert runtime.redis.zcard(runtime.keys.call_gateways(MODEL_SERVICE)) == 0
