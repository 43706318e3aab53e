"""What a network run's page shows of its journal: the state after the latest agent, and a
router that failed as the decision that stopped the network."""

from __future__ import annotations

from typing import Any

from harness.events import NETWORK_HANDLER
from harness.observe.network_trace import RouteDecision, network_trace
from harness.runtime.ledger import RunRecord


def _record(function_id: str = NETWORK_HANDLER, result: Any = None) -> RunRecord:
    return RunRecord(id="r1", function_id=function_id, status="completed", result=result)


def test_network_trace_is_none_for_a_run_of_another_function() -> None:
    # Given a run of another function with a "state" step / When traced / Then None
    journal = {"state:0": {"k": "run", "v": {"state": {"a": 1}, "refused": []}}}
    assert network_trace(_record("other"), journal) is None


def test_network_trace_shows_the_latest_state_and_a_failed_router_as_the_stop() -> None:
    # Given two agents' states, a decision, and a router that failed for good, then one
    # that is still being retried
    journal: dict[str, dict[str, Any]] = {
        "route:0": {"k": "run", "v": {"next": "a", "reason": "first", "by": "agent"}},
        "state:0": {"k": "run", "v": {"state": {"n": 1}, "refused": []}},
        "state:1": {"k": "run", "v": {"state": {"n": 2}, "refused": []}},
        "route:1": {"k": "run", "e": "boom", "final": True},
        "route:2": {"k": "run", "e": "slow", "n": 2},
    }
    # When traced
    trace = network_trace(_record(result={"state": {"n": 0}}), journal)
    # Then the state is the latest agent's, and the failures stop the network, saying why
    assert trace is not None
    assert (trace.state, trace.agents) == ({"n": 2}, 2)
    assert trace.decisions == [
        RouteDecision(1, "a", "first", "agent"),
        RouteDecision(2, None, "the router failed: boom", ""),
        RouteDecision(3, None, "the router is retrying: slow", ""),
    ]


def test_network_trace_before_any_agent_shows_the_outputs_state() -> None:
    # Given a network that stopped before any agent ran, its starting state in its output
    trace = network_trace(_record(result={"state": {"topic": "x"}}), {})
    # Then that state is shown, after no agent
    assert trace is not None and (trace.state, trace.agents) == ({"topic": "x"}, 0)
