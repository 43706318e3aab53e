"""Structured tool results: the model reads the text, the run keeps the data."""

from __future__ import annotations

from harness.tools.base import Tool, ToolContext, ToolOutcome, ToolParams
from tests.agent.conftest import AgentRig
from tests.fakes.model_server import Reply, anthropic_tool_results


class Forecast(Tool[ToolParams]):
    """Answers a forecast as text and as data."""

    name = "forecast"
    description = "The weather."
    parameters = ToolParams

    def run(self, params: ToolParams, ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome("21 °C and sunny", structured={"temp_c": 21, "sky": "sunny"})


def test_a_structured_result_is_kept_in_the_step_and_the_model_reads_only_its_text(
    agent: AgentRig,
) -> None:
    # Given a tool that answers text and data
    agent.deps.tools.register(Forecast())
    agent.model.script(Reply.tool("forecast"), Reply.answer("Sunny."))
    # When the model calls it
    run_id = agent.say("weather?")
    # Then the model got the text, as any tool result
    (block,) = anthropic_tool_results(agent.model.requests[1].body)
    assert block["content"] in ("21 °C and sunny", [{"type": "text", "text": "21 °C and sunny"}])
    assert "temp_c" not in str(agent.model.requests[1].body), "the data must not reach the model"
    # And the run's tool step kept the data beside it
    step = agent.runtime.ledger.journal(run_id)["tool:0"]
    assert step["v"]["structured"] == {"temp_c": 21, "sky": "sunny"}, step
    assert step["v"]["content"] == "21 °C and sunny"
