"""A durable function asks a named agent for a typed result: `harness.agent.api.run_agent`."""

from __future__ import annotations

from typing import Any, cast

import pytest
from pydantic import BaseModel

from harness.agent.api import FunctionContext, run_agent
from harness.agent.delegation import SUBAGENT_FUNCTION
from harness.events import APPROVAL_REQUESTED, SUBAGENT_SPAWN
from harness.runtime import Context, Runtime, event, function, publish, run_id_for
from harness.runtime.ledger import RunRecord
from harness.runtime.testing import drain
from harness.sidecar.forwarding import Reach, perform
from harness.sidecar.served_chats import ServedChats
from harness.sidecar.wire import StepInvoke
from tests.agent.conftest import AgentRig, KillsTheWorkerOnce
from tests.agent.roster.test_named_delegation import write_agent
from tests.fakes.model_server import Reply, anthropic_tool_results
from tests.runtime_fixtures import ManualClock

TRIGGER = "test/count.apples"


class Count(BaseModel):
    """The typed result the test function asks for."""

    n: int
    fruit: str = "apple"


@function(id="count-apples", trigger=event(TRIGGER))
def count_apples(ctx: Context) -> dict[str, Any]:
    """Ask the counter for a `Count`; return it and whether it came back as one."""
    result = run_agent(ctx, "counter", "count the apples", output=Count)
    return {"count": result.model_dump(), "is_count": isinstance(result, Count)}


class _ThroughTheSidecar:
    """A workspace function's `ctx` as the sidecar's host has it: each invoke is answered by
    the trusted executor's `perform`, under its invoke policy, with the run's real `ctx`."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._reach = Reach(own_ids=frozenset(), served=ServedChats(ctx.runtime, "pairing"))

    @property
    def step(self) -> _ThroughTheSidecar:
        return self

    def invoke(
        self,
        step_id: str,
        function_id: str,
        data: dict[str, Any] | None = None,
        timeout: str | float | None = None,
    ) -> Any:
        asked = StepInvoke(step_id=step_id, function_id=function_id, data=data, timeout=timeout)
        return perform(self._ctx, asked, self._reach, lambda: None)


@function(id="count-apples-in-sidecar", trigger=event(TRIGGER + ".sidecar"))
def count_apples_in_sidecar(ctx: Context) -> dict[str, Any]:
    """`count_apples`, its invoke going through the sidecar's executor."""
    host: FunctionContext = _ThroughTheSidecar(ctx)
    return {"count": run_agent(host, "counter", "count the apples", output=Count).model_dump()}


@pytest.fixture
def rig(agent: AgentRig) -> AgentRig:
    agent.runtime.registry.register(count_apples)
    agent.runtime.registry.register(count_apples_in_sidecar)
    agent.runtime.register_functions()
    write_agent(agent.workspace, "counter", "description: Counts fruit.\ntools: [write]")
    return agent


def _run(rig: AgentRig, name: str = TRIGGER, *, drained: bool = True) -> str:
    """Publish the test function's trigger; its run id."""
    result = publish({"name": name, "data": {}}, runtime=rig.runtime)
    if drained:
        drain(rig.runtime)
    [run_id] = result.run_ids
    return run_id


def _record(runtime: Runtime, run_id: str) -> RunRecord:
    record = runtime.ledger.run(run_id)
    assert record is not None, f"no run {run_id}"
    return record


def test_run_agent_returns_the_answer_as_the_output_model(rig: AgentRig) -> None:
    # Given a counter that answers JSON
    rig.model.script(Reply.answer('{"n": 3, "fruit": "pear"}'))

    # When a function asks it for a Count
    run_id = _run(rig)

    # Then the function got a Count, the child was told Count's schema, and it ran as a child
    record = _record(rig.runtime, run_id)
    assert record.status == "completed", record.error
    assert record.result == {"count": {"n": 3, "fruit": "pear"}, "is_count": True}
    [request] = rig.model.requests
    task = str(request.body["messages"][0]["content"])
    assert "count the apples" in task and "JSON Schema" in task and '"Count"' in task
    child = _record(rig.runtime, run_id_for(SUBAGENT_FUNCTION, f"{run_id}:agent-counter:0"))
    assert child.parent is not None and child.parent.run_id == run_id


def test_run_agent_output_wins_over_the_agent_files_schema(rig: AgentRig) -> None:
    # Given a counter whose own file wants {"total": string}
    front = "description: Counts.\noutput_schema: {type: object, required: [total]}"
    write_agent(rig.workspace, "counter", front)
    rig.model.script(Reply.answer('{"n": 4}'))

    # When a function asks it for a Count
    record = _record(rig.runtime, _run(rig))

    # Then the function's model decided what the answer had to be
    assert record.result == {"count": {"n": 4, "fruit": "apple"}, "is_count": True}
    assert "total" not in str(rig.model.requests[0].body["messages"][0]["content"])


def test_run_agent_wrong_answer_gets_one_correction(rig: AgentRig) -> None:
    # Given a counter that answers prose, then the JSON
    rig.model.script(Reply.answer("There are three."), Reply.answer('```json\n{"n": 3}\n```'))

    # When a function asks it for a Count
    record = _record(rig.runtime, _run(rig))

    # Then the second answer, told what was wrong with the first, is the result
    assert record.result == {"count": {"n": 3, "fruit": "apple"}, "is_count": True}
    retry = rig.model.requests[-1].body
    assert "does not match the required JSON Schema" in str(retry["messages"][-1]["content"])
    assert len(rig.model.requests) == 2


def test_run_agent_wrong_twice_fails_the_function_naming_the_agent_and_the_problem(
    rig: AgentRig,
) -> None:
    # Given a counter that never answers a valid Count
    rig.model.script(Reply.answer("There are three."), Reply.answer('{"n": "three"}'))

    # When a function asks it for a Count
    record = _record(rig.runtime, _run(rig))

    # Then the function's run failed at once, saying which agent, which model, what was wrong
    assert record.status == "failed"
    assert record.error.startswith("AgentAnswerError:"), record.error
    assert "'counter'" in record.error and "Count" in record.error
    assert "'three' is not of type 'integer'" in record.error
    assert len(rig.model.requests) == 2  # no retry of the function ran the agent again


def test_run_agent_unknown_agent_fails_the_function_clearly(agent: AgentRig) -> None:
    # Given no agent files at all
    agent.runtime.registry.register(count_apples)
    agent.runtime.register_functions()

    # When a function asks "counter"
    record = _record(agent.runtime, _run(agent))

    # Then its run failed saying the agent does not exist, with no model call
    assert record.status == "failed"
    assert "AgentRunError" in record.error and "'counter' does not exist" in record.error
    assert agent.model.requests == []


def test_run_agent_worker_killed_in_the_child_gives_one_result(
    rig: AgentRig, clock: ManualClock
) -> None:
    # Given a counter whose tool kills the worker the first time
    tool = KillsTheWorkerOnce()
    rig.deps.tools.register(tool)
    write_agent(rig.workspace, "counter", f"description: Counts.\ntools: [{tool.name}]")
    rig.model.script(Reply.tool(tool.name, {}), Reply.answer('{"n": 5}'))
    run_id = _run(rig, drained=False)
    with pytest.raises(KeyboardInterrupt):
        drain(rig.runtime)

    # When the dead worker's lease expires and the runs resume
    rig.resume(clock)

    # Then the child finished without a repeated model call and the function got one result
    record = _record(rig.runtime, run_id)
    assert record.status == "completed", record.error
    assert record.result == {"count": {"n": 5, "fruit": "apple"}, "is_count": True}
    assert tool.calls == 2
    assert len(rig.model.requests) == 2


def test_run_agent_from_a_sidecar_function_is_unattended(rig: AgentRig) -> None:
    # Given a counter that tries a risky call (a write in functions/), then answers
    rig.model.script(
        Reply.tool("write", {"path": "functions/evil.py", "content": "x = 1\n"}),
        Reply.answer('{"n": 2}'),
    )

    # When a workspace function asks it for a Count through the sidecar's executor
    record = _record(rig.runtime, _run(rig, TRIGGER + ".sidecar"))

    # Then it got its Count; the risky call asked nobody and was refused (unattended: ask,
    # and no owner is known to ask)
    assert record.status == "completed", record.error
    assert record.result == {"count": {"n": 2, "fruit": "apple"}}
    [result] = anthropic_tool_results(rig.model.requests[-1].body)
    assert "no owner is known" in str(result["content"]), result
    assert not (rig.workspace / "functions" / "evil.py").exists()
    events = cast(
        list[tuple[str, dict[str, str]]], rig.runtime.redis.xrange(rig.runtime.keys.events)
    )
    names = [fields["name"] for _id, fields in events]
    assert APPROVAL_REQUESTED not in names
    assert rig.replies() == []


def test_sub_agent_refuses_an_invalid_output_schema_before_any_model_call(rig: AgentRig) -> None:
    # Given a sub-agent task whose output schema is not a JSON Schema
    data = {"task": "count", "agent": "counter", "output_schema": {"type": 12}}

    # When it runs
    result = publish({"name": SUBAGENT_SPAWN, "data": data}, runtime=rig.runtime)
    drain(rig.runtime)

    # Then its run failed saying so, and the model was never called
    record = _record(rig.runtime, run_id_for(SUBAGENT_FUNCTION, result.event_id))
    assert record.status == "failed"
    assert "output schema it was given is not valid" in record.error, record.error
    assert rig.model.requests == []
