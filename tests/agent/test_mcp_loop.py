"""An MCP tool called by the model through the agent's real loop, as a durable step."""

from __future__ import annotations

from harness.mcp import McpToolbox
from tests.agent.conftest import AgentRig
from tests.fakes.model_server import Reply, anthropic_tool_results
from tests.mcp.test_mcp_tools import demo_config


def test_the_model_calls_an_mcp_tool_through_the_real_loop(agent: AgentRig) -> None:
    # Given an agent whose tools include the demo server, marked safe (no approval asked)
    box = McpToolbox([demo_config().model_copy(update={"safe": True})])
    agent.deps.tools.attach(box)
    agent.model.script(Reply.tool("demo__echo", {"text": "ping"}), Reply.answer("It said ping."))
    try:
        # When the model calls the MCP tool
        agent.say("use the echo tool")
    finally:
        box.close()

    # Then the tool was offered, run once as a step, and its answer went back to the model,
    # marked as outside content
    first, second = (r.body for r in agent.model.requests)
    assert "demo__echo" in [t["name"] for t in first["tools"]]
    results = anthropic_tool_results(second)
    content = str(results[0]["content"]) if results else ""
    assert content.startswith('<untrusted source="demo__echo (MCP tool)"'), results
    assert "\necho: ping\n</untrusted id=" in content, results
    assert agent.replies() == ["It said ping."]


def test_an_mcp_tool_not_marked_safe_is_refused_when_nobody_can_approve_it(
    agent: AgentRig,
) -> None:
    # Given the demo server not marked safe, in a run with nobody to ask (AGENT_APPROVAL=risky)
    box = McpToolbox([demo_config()])
    agent.deps.tools.attach(box)
    agent.model.script(Reply.tool("demo__echo", {"text": "ping"}), Reply.answer("I may not."))
    try:
        # When the model calls the MCP tool
        agent.say("use the echo tool")
    finally:
        box.close()
    # Then the model got the refusal with the reason, instead of the tool's answer
    second = agent.model.requests[1].body
    results = anthropic_tool_results(second)
    assert results and "needs a person's approval" in str(results[0]["content"]), results
