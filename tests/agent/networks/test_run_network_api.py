"""A durable function runs a network and gets its answer and state: `run_network`."""

from __future__ import annotations

from typing import Any

from harness.agent.api import run_network
from harness.runtime import Context, event, function, publish
from harness.runtime.testing import drain
from tests.agent.networks.conftest import NetworkRig
from tests.fakes.model_server import Reply

TRIGGER = "test/tally"
NETWORK = (
    "---\ndescription: Tallies.\nagents: [counter]\n"
    "router: {kind: sequence, order: [counter]}\n"
    "state:\n  type: object\n  properties:\n    n: {type: integer}\n---\n"
)


@function(id="tally", trigger=event(TRIGGER))
def tally(ctx: Context) -> dict[str, Any]:
    """Run the tally network from n=1; return what it gave."""
    return run_network(ctx, "tally", "count the apples", {"n": 1})


def test_run_network_returns_the_answer_and_the_final_state(network: NetworkRig) -> None:
    # Given a one-agent network whose agent sets n
    rig = network.agent
    rig.runtime.registry.register(tally)
    rig.runtime.register_functions()
    network.declare_agent("counter", "[]")
    network.declare_network("tally", NETWORK)
    rig.model.script(Reply.tool("state_set", {"key": "n", "value": 3}), Reply.answer("Three."))

    # When a function runs the network
    [run_id] = publish({"name": TRIGGER, "data": {}}, runtime=rig.runtime).run_ids
    drain(rig.runtime)

    # Then it got the last answer and the state the agent left, and nobody was answered
    record = network.record(run_id)
    assert record.status == "completed", record.error
    assert record.result["answer"] == "Three."
    assert record.result["state"] == {"n": 3}
    assert rig.replies() == []
