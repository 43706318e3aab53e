"""`harness runs replay` of a real agent turn: every model call and tool call is answered from
the run's journal, so the scripted model is not asked again and the tool does not run again."""

from __future__ import annotations

from typing import Any

from harness.agent.handlers import handle_message
from harness.observe.replay_check import check_replay
from harness.runtime import Context
from harness.runtime.functions import Function, FunctionRegistry
from harness.tools.base import Tool, ToolContext, ToolParams
from tests.agent.conftest import AgentRig
from tests.fakes.model_server import Reply


class Stamp(Tool[ToolParams]):
    """Counts its calls."""

    name = "stamp"
    description = "Stamps the paperwork."
    parameters = ToolParams

    def __init__(self) -> None:
        self.calls = 0

    def run(self, params: ToolParams, ctx: ToolContext) -> str:
        self.calls += 1
        return "stamped"


def test_replay_of_a_turn_with_a_tool_call_calls_neither_model_nor_tool(agent: AgentRig) -> None:
    # Given a finished turn in which the model called a tool, then answered
    stamp = Stamp()
    agent.deps.tools.register(stamp)
    agent.model.script(Reply.tool("stamp", {}), Reply.answer("Stamped it."))
    run_id = agent.say("stamp it")
    assert agent.replies() == ["Stamped it."] and stamp.calls == 1
    requests = len(agent.model.requests)
    journal = agent.runtime.ledger.journal(run_id)
    lines = agent.session_lines()
    record = agent.runtime.ledger.run(run_id)
    assert record is not None and record.status == "completed", record

    # When the run is replayed
    verdict = check_replay(agent.runtime, record)

    # Then its output is identical, the model was not asked again, the tool did not run
    # again, and neither the journal nor the chat's session changed
    assert verdict.identical, verdict
    assert len(agent.model.requests) == requests
    assert stamp.calls == 1
    assert agent.runtime.ledger.journal(run_id) == journal
    assert agent.session_lines() == lines
    assert agent.replies() == ["Stamped it."]


def test_replay_of_a_turn_whose_code_now_asks_another_step_first_names_it(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a finished turn with a tool call
    stamp = Stamp()
    agent.deps.tools.register(stamp)
    agent.model.script(Reply.tool("stamp", {}), Reply.answer("Stamped it."))
    record = agent.runtime.ledger.run(agent.say("stamp it"))
    assert record is not None and record.status == "completed", record
    requests = len(agent.model.requests)

    # When the turn's code now looks something up before it thinks, and the run is replayed
    def checks_first(ctx: Context) -> Any:
        ctx.step.run("lookup", lambda: "found")
        return handle_message(ctx)

    registry.register(Function(handle_message.spec, checks_first))
    verdict = check_replay(agent.runtime, record)

    # Then the new step is named as the first difference, and nothing ran for real
    assert not verdict.identical
    assert verdict.first_difference == "lookup:0", verdict
    assert len(agent.model.requests) == requests and stamp.calls == 1
