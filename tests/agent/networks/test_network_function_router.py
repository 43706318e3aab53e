"""A network routed by a function the agent wrote in `functions/`: each decision a durable
invoke of that function, its answer checked.

The sidecar serves such a function from its sandboxed host; here an ordinary test function
is registered under the id and recorded as the file source's (as the sidecar's executor
records what it loaded), since the contract under test is the invoke and its answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.runtime import Context, event, function
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.agent.networks.conftest import NetworkRig
from tests.agent.networks.test_network_routers import AFTER_EACH, SCHEMA, TRIO, _three_agents_write
from tests.fakes.workspace_functions import serve_as_workspace_function
from tests.runtime_fixtures import ManualClock

ROUTER_ID = "router-essay"
NETWORK = (
    f"---\ndescription: Writes a checked essay.\n{TRIO}"
    f"router: {{kind: function, id: {ROUTER_ID}}}\n{SCHEMA}---\n"
)

Answer = Callable[[Context], Any]


def _essay_router(ctx: Context) -> Any:
    """Researcher until there are facts, writer until a draft, reviewer until approved."""
    state = ctx.event.data["state"]
    if state.get("approved"):
        return {"next": None, "reason": "approved"}
    if "facts" not in state:
        return {"next": "researcher", "reason": "no facts yet"}
    return {"next": "writer" if "draft" not in state else "reviewer", "reason": "next part"}


def _serve(
    network: NetworkRig, registry: FunctionRegistry, answer: Answer, *, workspace: bool = True
) -> list[dict[str, Any]]:
    """Register `answer` as the function `ROUTER_ID` and, unless `workspace` is False, record
    it as one the sidecar loaded from `functions/`. Returns the data of each call."""
    calls: list[dict[str, Any]] = []

    @function(id=ROUTER_ID, trigger=event("router/essay"))
    def router_function(ctx: Context) -> Any:
        calls.append(dict(ctx.event.data))
        return answer(ctx)

    runtime = network.agent.runtime
    serve_as_workspace_function(runtime, registry, router_function, recorded=workspace)
    for name in ("researcher", "writer", "reviewer"):
        network.declare_agent(name)
    network.declare_network("essay", NETWORK)
    return calls


def test_function_router_decides_three_iterations_then_stops(
    network: NetworkRig, registry: FunctionRegistry
) -> None:
    # Given a network whose router is a workspace function, and three agents that write
    calls = _serve(network, registry, _essay_router)
    _three_agents_write(network)

    # When the network runs
    run_id = network.start("essay", "An essay on tea")

    # Then the function was invoked once per decision with the state, the last result, the
    # iteration and the agents, and its choices ran the agents in order, then stopped it
    assert network.states(run_id) == AFTER_EACH
    assert [c["iteration"] for c in calls] == [0, 1, 2, 3], calls
    assert [c["state"] for c in calls] == [{}, *AFTER_EACH], calls
    assert calls[0]["last"] is None and calls[0]["agents"] == ["researcher", "writer", "reviewer"]
    assert calls[2]["last"] == {"agent": "writer", "answer": "Drafted.", "failed": False}
    decisions = network.steps(run_id, "route")
    assert [d["next"] for d in decisions] == ["researcher", "writer", "reviewer", None]
    assert {d["by"] for d in decisions} == {"function"}, decisions
    assert decisions[-1]["reason"] == f"{ROUTER_ID} stopped: approved"
    assert network.agent.replies() == ["Approved: Tea is old."]


def test_function_router_decision_is_not_asked_again_on_replay(
    network: NetworkRig, registry: FunctionRegistry
) -> None:
    # Given a network routed by a function, run to the end
    calls = _serve(network, registry, _essay_router)
    _three_agents_write(network)
    run_id = network.start("essay", "An essay on tea")

    # Then each decision was one invoke (the network run's replays after each child did not
    # invoke the function again)
    assert len(calls) == 4, calls
    assert len(network.steps(run_id, "route-call")) == 4


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"next": "poet", "reason": "rhymes"}, "chose 'poet', not an agent of this network"),
        ("researcher", "answered 'researcher', not {'next'"),
        ({"reason": "no next"}, "not {'next'"),
        ({"next": 3}, "chose '3', not an agent"),
    ],
    ids=["unknown-agent", "not-an-object", "no-next", "not-a-name"],
)
def test_function_router_answer_that_is_not_a_decision_stops_the_network(
    network: NetworkRig, registry: FunctionRegistry, answer: Any, expected: str
) -> None:
    # Given a router function that answers something other than an agent of the network
    _serve(network, registry, lambda _ctx: answer)

    # When the network runs
    run_id = network.start("essay", "An essay on tea")

    # Then no agent ran and the reason says what was wrong
    out = network.record(run_id).result
    assert out["iterations"] == 0, out
    assert expected in out["stopped"], out["stopped"]
    assert network.steps(run_id, "route")[0]["by"] == "function"


def test_function_router_must_be_a_workspace_function(
    network: NetworkRig, registry: FunctionRegistry
) -> None:
    # Given a network naming a function the sidecar did not load from functions/ (as a
    # network file naming one of the fleet's own functions would)
    calls = _serve(network, registry, _essay_router, workspace=False)

    # When the network runs
    run_id = network.start("essay", "An essay on tea")

    # Then the function is never invoked and the network stops saying why
    assert calls == []
    out = network.record(run_id).result
    assert out["iterations"] == 0
    assert out["stopped"] == f"{ROUTER_ID!r} is not a function of the workspace's functions/"


def test_function_router_that_does_not_answer_in_time_stops_the_network(
    network: NetworkRig, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given a router function that sleeps longer than a decision may take
    def sleepy(ctx: Context) -> Any:
        ctx.step.sleep("nap", "10m")
        return {"next": "researcher", "reason": "late"}

    _serve(network, registry, sleepy)
    run_id = network.start("essay", "An essay on tea")

    # When the decision's timeout passes
    clock.advance(61)
    drain(network.agent.runtime)

    # Then the network stopped with the failure as its reason, and no agent ran
    out = network.record(run_id).result
    assert out is not None and out["iterations"] == 0, out
    assert out["stopped"].startswith(f"the router function {ROUTER_ID} failed:"), out


@pytest.mark.usefixtures("restore_settings")
def test_networks_command_shows_a_function_router_and_refuses_a_bad_id(
    network: NetworkRig,
) -> None:
    # Given a network routed by a function, and one whose function id is not an id
    network.declare_agent("writer")
    head = "---\ndescription: x\nagents: [writer]\n"
    network.declare_network("good", f"{head}router: {{kind: function, id: router-a}}\n---\n")
    network.declare_network("bad", f"{head}router: {{kind: function, id: 'a b/c'}}\n---\n")

    # When `harness networks` runs on that workspace
    workspace = str(network.agent.workspace)
    result = CliRunner().invoke(app, ["--workspace", workspace, "networks"])

    # Then the good one shows its router's id, and the bad one is a load error at its line
    assert result.exit_code == 0, result.output
    assert "function: router-a" in result.output, result.output
    assert "networks/bad.md:4" in result.output, result.output
