"""A named agent's model settings hold on the model gateway's path (`MODEL_CALLS=gateway`) as
they do inline: the gateway makes the call with the agent's limit and temperature."""

from __future__ import annotations

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.gateway import ModelGateway
from harness.agent.model_calls import ModelCallRequest
from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig, make_settings
from tests.agent.roster.test_named_delegation import write_agent
from tests.fakes.model_server import Reply


def test_a_named_agents_max_tokens_reaches_the_model_through_the_gateway(
    agent: AgentRig,
) -> None:
    # Given a named agent with its own output limit and temperature, bound to chat-a, and
    # model calls offloaded to the gateway (no gateway runs inside drain)
    front = "description: Writes code.\nmax_tokens: 321\ntemperature: 0.3\n"
    write_agent(agent.workspace, "coder", front + "bindings: [{channel: test, chat_id: chat-a}]")
    settings = make_settings(agent.workspace, agent.model, model_calls="gateway")
    set_agent_deps(build_deps(settings))
    agent.runtime.call_servers.clear()
    agent.model.script(Reply.answer("done"))

    # When chat-a writes and a gateway makes the parked call
    agent.say("hi", session="chat-a")
    assert ModelGateway(agent.runtime, settings).serve_due() == 1
    drain(agent.runtime)

    # Then the model saw the agent's limit and temperature, not the fleet's default limit
    (call,) = (r.body for r in agent.model.requests)
    assert call["max_tokens"] == 321, f"expected the agent's 321, got {call['max_tokens']}"
    assert call["temperature"] == 0.3
    assert agent.replies() == ["done"]


def test_a_request_parked_before_max_tokens_was_recorded_still_loads() -> None:
    # Given a request as an older worker recorded it, with no max_tokens
    old = '{"run_id": "r1", "provider": "anthropic", "model": "m", "system": [],'
    old += ' "messages": [], "tools": []}'
    # When the gateway reads it
    request = ModelCallRequest.model_validate_json(old)
    # Then it loads, leaving the limit to the gateway's provider
    assert request.max_tokens is None
