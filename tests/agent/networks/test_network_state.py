"""Shared state: checked on every write, kept exactly once across a worker's death."""

from __future__ import annotations

import pytest

from harness.runtime.testing import drain
from tests.agent.conftest import KillsTheWorkerOnce
from tests.agent.networks.conftest import NetworkRig
from tests.fakes.model_server import Reply
from tests.runtime_fixtures import ManualClock

PAIR = (
    "---\ndescription: Two steps.\nagents: [writer, checker]\n"
    "router: {kind: sequence, order: [writer, checker]}\n"
    "state: {type: object, properties: {draft: {type: string}, ok: {type: boolean}}}\n---\n"
)


def test_invalid_state_set_is_an_error_result_and_leaves_the_state_unchanged(
    network: NetworkRig,
) -> None:
    # Given a network whose schema wants `draft` to be a string
    network.declare_agent("writer")
    network.declare_network("one", PAIR.replace("[writer, checker]", "[writer]"))
    network.agent.model.script(
        Reply.tool("state_set", {"key": "draft", "value": 42}), Reply.answer("Tried.")
    )

    # When the writer sets it to a number
    run_id = network.start("one", "Write", state={"draft": "kept"})

    # Then the model got an error result naming the problem, and the state is as it was
    result = network.agent.model.requests[1].body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result.get("is_error") is True, result
    assert "refused" in str(result["content"]) and "string" in str(result["content"]), result
    assert network.states(run_id) == [{"draft": "kept"}]
    assert network.record(run_id).result["state"] == {"draft": "kept"}


def test_a_starting_state_that_breaks_the_schema_runs_no_agent(network: NetworkRig) -> None:
    # Given the network, and a starting state of the wrong type
    network.declare_agent("writer")
    network.declare_agent("checker")
    network.declare_network("pair", PAIR)

    # When it is started with it
    run_id = network.start("pair", "Write", state={"ok": "yes"})

    # Then no model was called and the chat is told why
    assert network.agent.model.requests == []
    assert "does not fit" in network.record(run_id).result["answer"]
    assert len(network.agent.replies()) == 1


def test_worker_killed_mid_network_resumes_without_rerunning_finished_agents(
    network: NetworkRig, clock: ManualClock
) -> None:
    # Given a writer that sets the draft, and a checker whose tool kills the worker once
    killer = KillsTheWorkerOnce()
    network.agent.deps.tools.register(killer)
    network.declare_agent("writer")
    network.declare_agent("checker", tools=f"[{killer.name}]")
    network.declare_network("pair", PAIR)
    network.agent.model.script(
        Reply.tool("state_set", {"key": "draft", "value": "v1"}), Reply.answer("Drafted."),
        Reply.tool("state_set", {"key": "ok", "value": True}), Reply.tool(killer.name, {}),
        Reply.answer("Checked."),
    )  # fmt: skip
    run_id = network.start("pair", "Write", run=False)

    # When the worker dies in the checker's tool, and the runs resume
    with pytest.raises(KeyboardInterrupt):
        drain(network.agent.runtime)
    clock.advance(network.agent.runtime.lease_ttl + 1)
    drain(network.agent.runtime)

    # Then the writer ran once (two model calls), the checker's write made before the death
    # was kept once, and the chat got one answer
    assert len(network.agent.model.requests) == 5
    assert killer.calls == 2
    assert network.states(run_id) == [{"draft": "v1"}, {"draft": "v1", "ok": True}]
    assert network.record(run_id).result["answer"] == "Checked."
    assert network.agent.replies() == ["Checked."]
