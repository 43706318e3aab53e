"""The model gateway sends the request the run's worker rendered (`ModelCallRequest.wire`), as
is: it reads only the call's head, never the history, and the key is added when it sends."""

from __future__ import annotations

import json
from typing import Any

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.gateway import ModelGateway
from harness.runtime.testing import drain
from harness.settings import Settings
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply


def _on_gateway(agent: AgentRig) -> Settings:
    """The rig on offloaded model calls, with no gateway that drain would call itself."""
    settings = make_settings(agent.workspace, agent.model, model_calls="gateway")
    set_agent_deps(build_deps(settings))
    agent.runtime.call_servers.clear()
    return settings


def _parked(agent: AgentRig) -> tuple[str, dict[str, Any]]:
    """The one parked call's Redis key and its recorded request."""
    keys = list(agent.runtime.redis.scan_iter(f"{agent.runtime.keys.prefix}:call:*"))
    assert len(keys) == 1, f"expected one parked call, found {keys}"
    raw = agent.runtime.redis.hget(keys[0], "request")
    assert raw is not None, "the parked call has no request"
    return str(keys[0]), json.loads(raw)


def test_the_gateway_sends_the_wire_request_the_worker_rendered(agent: AgentRig) -> None:
    # Given a turn parked on its model call on the gateway path
    settings = _on_gateway(agent)
    agent.model.script(Reply.answer("Sent as rendered."))
    agent.say("hi")
    key, request = _parked(agent)
    assert request["wire"], "the worker recorded no wire form of the request"
    # ... whose neutral history no longer loads (the gateway must not need it)
    request["messages"] = [{"role": 42}]
    agent.runtime.redis.hset(key, "request", json.dumps(request))

    # When a gateway makes the call
    assert ModelGateway(agent.runtime, settings).serve_due() == 1
    drain(agent.runtime)

    # Then the model got the rendered request as it was recorded, and the turn was answered
    (sent,) = agent.model.requests
    assert sent.raw == request["wire"].encode(), "the gateway did not send the wire form as is"
    assert agent.replies() == ["Sent as rendered."]


def test_a_request_parked_without_its_wire_form_is_rendered_by_the_gateway(
    agent: AgentRig,
) -> None:
    # Given a parked call as a worker from before the wire form recorded it
    settings = _on_gateway(agent)
    agent.model.script(Reply.answer("Rendered here."))
    agent.say("hi")
    key, request = _parked(agent)
    wire = request.pop("wire")
    agent.runtime.redis.hset(key, "request", json.dumps(request))

    # When a gateway makes the call
    assert ModelGateway(agent.runtime, settings).serve_due() == 1
    drain(agent.runtime)

    # Then it rendered the same request the worker would have, and the turn was answered
    (sent,) = agent.model.requests
    assert sent.body == json.loads(wire), "the gateway's rendering differs from the worker's"
    assert agent.replies() == ["Rendered here."]


def test_the_parked_request_holds_no_api_key_and_the_call_carries_it(agent: AgentRig) -> None:
    # Given the gateway path with an API key configured
    settings = _on_gateway(agent)
    secret = agent.model.api_key
    assert secret and settings.anthropic_api_key is not None
    agent.model.script(Reply.answer("ok"))

    # When a turn parks on its model call
    agent.say("hi")

    # Then nothing in Redis holds the key
    redis = agent.runtime.redis
    for key in redis.scan_iter("*"):
        if redis.type(key) == "hash":
            values = " ".join(str(v) for v in redis.hgetall(key).values())
            assert secret not in values, f"the API key was stored in {key}"
    # And the call the gateway makes carries it, added when sent
    assert ModelGateway(agent.runtime, settings).serve_due() == 1
    (sent,) = agent.model.requests
    sent_key = sent.headers.get("x-api-key") or sent.headers.get("authorization", "")
    assert sent_key in (secret, f"Bearer {secret}"), "the call went without the key"
