"""The model gateway's upkeep: what it closes when it stops, and how it rides out a Redis that
does not answer."""

from __future__ import annotations

import threading
from pathlib import Path

from harness.agent.gateway import ModelGateway
from harness.agent.model_calls import ModelCallRequest
from harness.llm.anthropic import AnthropicProvider
from harness.runtime import Runtime
from tests.agent.conftest import make_settings
from tests.fakes.model_server import ModelServer
from tests.waiting import wait_until


def test_a_stopped_gateway_closes_its_providers_sync_clients_too(
    runtime: Runtime, model_server: ModelServer, tmp_path: Path
) -> None:
    # Given a gateway that built a provider for a call (which opens a sync client too)
    settings = make_settings(tmp_path / "workspace", model_server, model_calls="gateway")
    gateway = ModelGateway(runtime, settings)
    request = ModelCallRequest(
        run_id="r1", provider="anthropic", model="m", system=[], messages=[], tools=[]
    )
    provider = gateway._provider(request)
    assert isinstance(provider, AnthropicProvider)
    # When the gateway serves until idle, and so winds down
    gateway.serve_due()
    # Then the provider's sync client is closed as well as its async one
    assert provider._client.is_closed(), "the sync SDK client was left open"


def test_a_gateway_serving_until_idle_rides_out_a_redis_that_does_not_answer(
    unreachable_runtime: Runtime, model_server: ModelServer, tmp_path: Path
) -> None:
    # Given a gateway on a Redis that does not answer, serving until idle on a thread
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
