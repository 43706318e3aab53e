"""Networks run end to end under each kind of router, with the state checked after each agent."""

from __future__ import annotations

from typing import Any

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.gateway import ModelGateway
from harness.agent.networks.code_routers import router
from harness.agent.networks.decisions import AgentResult
from harness.records.spend import spend_store
from harness.records.usage import utc_day
from harness.runtime.testing import drain
from tests.agent.conftest import make_settings
from tests.agent.networks.conftest import NetworkRig
from tests.fakes.model_server import Reply

SCHEMA = (
    "state:\n  type: object\n  additionalProperties: false\n  properties:\n"
    "    facts: {type: array, items: {type: string}}\n    draft: {type: string}\n"
    "    approved: {type: boolean}\n"
)
TRIO = "agents: [researcher, writer, reviewer]\n"
APPROVED_STOPS = "    - {when: {state: approved, equals: true}, then: stop}\n"
NO_FACTS = "    - {when: {state: facts, missing: true}, then: researcher}\n"


def _trio(network: NetworkRig) -> None:
    for name in ("researcher", "writer", "reviewer"):
        network.declare_agent(name)


def _three_agents_write(network: NetworkRig, *, routed: tuple[str, ...] = ()) -> None:
    """Script: researcher sets facts, writer sets draft, reviewer approves; when `routed`
    names agents, a routing agent's `route` call comes before each of them (and "stop")."""
    turns = [
        ("researcher", "facts", ["tea is old"], "Found one fact."),
        ("writer", "draft", "Tea is old.", "Drafted."),
        ("reviewer", "approved", True, "Approved: Tea is old."),
    ]
    replies = []
    for name, key, value, answer in turns:
        if name in routed:
            replies.append(Reply.tool("route", {"next": name, "reason": f"{name}'s turn"}))
        replies += [Reply.tool("state_set", {"key": key, "value": value}), Reply.answer(answer)]
    if "stop" in routed:
        replies.append(Reply.tool("route", {"next": "stop", "reason": "approved"}))
    network.agent.model.script(*replies)


AFTER_EACH = [
    {"facts": ["tea is old"]},
    {"facts": ["tea is old"], "draft": "Tea is old."},
    {"facts": ["tea is old"], "draft": "Tea is old.", "approved": True},
]


def test_rules_router_runs_three_agents_and_stops_when_the_state_says_so(
    network: NetworkRig,
) -> None:
    # Given three agents and a rules router over the state
    _trio(network)
    network.declare_network(
        "essay",
        f"---\ndescription: Writes a checked essay.\n{TRIO}router:\n  kind: rules\n  rules:\n"
        f"{APPROVED_STOPS}{NO_FACTS}"
        "    - {when: {state: draft, missing: true}, then: writer}\n"
        "    - {then: reviewer}\n"
        f"{SCHEMA}---\n",
    )
    _three_agents_write(network)

    # When the network runs on a task
    run_id = network.start("essay", "An essay on tea")

    # Then each agent ran once, in the order the rules chose, the state grew after each, and
    # the last answer went to the chat and is the run's output with the final state
    assert network.states(run_id) == AFTER_EACH
    decisions = network.steps(run_id, "route")
    assert [d["next"] for d in decisions] == ["researcher", "writer", "reviewer", None]
    assert decisions[-1]["reason"].startswith("rule 1:"), decisions[-1]
    assert network.agent.replies() == ["Approved: Tea is old."]
    out = network.record(run_id).result
    assert out["state"] == AFTER_EACH[-1] and out["iterations"] == 3, out
    assert out["answer"] == "Approved: Tea is old."


def test_each_agent_is_told_the_task_and_the_state_and_offered_the_state_tools(
    network: NetworkRig,
) -> None:
    # Given the same network
    _trio(network)
    network.declare_network(
        "essay",
        f"---\ndescription: Writes.\n{TRIO}"
        f"router: {{kind: sequence, order: [researcher, writer]}}\n{SCHEMA}---\n",
    )
    network.agent.model.script(
        Reply.tool("state_set", {"key": "facts", "value": ["a"]}), Reply.answer("Found a."),
        Reply.answer("Wrote."),
    )  # fmt: skip

    # When it runs
    network.start("essay", "An essay on tea")

    # Then the writer's first request has the task, the state and the researcher's answer,
    # and offers its own tool plus state_get and state_set
    writer = network.agent.model.requests[2].body
    prompt = writer["messages"][0]["content"]
    text = prompt if isinstance(prompt, str) else " ".join(b.get("text", "") for b in prompt)
    assert "An essay on tea" in text and '"facts"' in text and "Found a." in text, text
    assert [t["name"] for t in writer["tools"]] == ["read", "state_get", "state_set"]


def test_routing_agent_picks_each_agent_then_stops_with_its_reasons_recorded(
    network: NetworkRig,
) -> None:
    # Given a network routed by a routing agent with instructions
    _trio(network)
    network.declare_network(
        "essay",
        f"---\ndescription: Writes a checked essay.\n{TRIO}router: {{kind: agent}}\n{SCHEMA}"
        "---\nResearch first, then write, then review.\n",
    )
    _three_agents_write(network, routed=("researcher", "writer", "reviewer", "stop"))

    # When the network runs
    run_id = network.start("essay", "An essay on tea")

    # Then the routing agent decided four times (its reasons recorded), the state grew after
    # each agent, and the routing calls offered only `route`, with the agents described
    assert network.states(run_id) == AFTER_EACH
    decisions = network.steps(run_id, "route")
    assert [(d["next"], d["reason"], d["by"]) for d in decisions] == [
        ("researcher", "researcher's turn", "agent"),
        ("writer", "writer's turn", "agent"),
        ("reviewer", "reviewer's turn", "agent"),
        (None, "approved", "agent"),
    ]
    routing = network.agent.model.requests[0].body
    assert [t["name"] for t in routing["tools"]] == ["route"]
    assert "The researcher." in str(routing["messages"]) and "Research first" in str(
        routing["system"]
    )
    assert network.agent.replies() == ["Approved: Tea is old."]


def test_routing_agent_naming_no_agent_of_the_network_stops_it(network: NetworkRig) -> None:
    # Given a routed network whose routing agent names an unknown agent
    _trio(network)
    network.declare_network("essay", f"---\ndescription: x\n{TRIO}router: {{kind: agent}}\n---\n")
    network.agent.model.script(Reply.tool("route", {"next": "ghost", "reason": "why not"}))

    # When it runs
    run_id = network.start("essay", "Anything")

    # Then no agent ran, and the decision says why
    [decision] = network.steps(run_id, "route")
    assert decision["next"] is None and "'ghost'" in decision["reason"], decision
    assert network.record(run_id).result["iterations"] == 0


def test_routing_agent_request_forces_the_route_tool(network: NetworkRig) -> None:
    # Given a routed network
    _trio(network)
    network.declare_network("essay", f"---\ndescription: x\n{TRIO}router: {{kind: agent}}\n---\n")
    network.agent.model.script(Reply.tool("route", {"next": "stop", "reason": "nothing to do"}))

    # When it runs
    network.start("essay", "Anything")

    # Then the routing call told the model it must call `route`
    routing = network.agent.model.requests[0].body
    assert routing.get("tool_choice") == {"type": "tool", "name": "route"}, routing


def test_routing_agent_answering_without_route_stops_with_its_text(network: NetworkRig) -> None:
    # Given a routed network whose model ignores the forced choice and answers in text
    _trio(network)
    network.declare_network("essay", f"---\ndescription: x\n{TRIO}router: {{kind: agent}}\n---\n")
    network.agent.model.script(Reply.answer("I would rather not pick."))

    # When it runs
    run_id = network.start("essay", "Anything")

    # Then no agent ran, and the decision records what the model said
    [decision] = network.steps(run_id, "route")
    assert decision["next"] is None, decision
    assert decision["reason"] == "the routing agent did not route: I would rather not pick."
    assert network.record(run_id).result["iterations"] == 0


def test_hybrid_router_uses_rules_first_and_the_routing_agent_when_none_matches(
    network: NetworkRig,
) -> None:
    # Given rules that handle the start and the end, and hand over in between
    _trio(network)
    network.declare_network(
        "essay",
        f"---\ndescription: Writes.\n{TRIO}router:\n  kind: rules\n  rules:\n"
        f"{APPROVED_STOPS}{NO_FACTS}    - {{then: agent}}\n{SCHEMA}---\n",
    )
    _three_agents_write(network, routed=("writer", "reviewer"))

    # When it runs
    run_id = network.start("essay", "An essay on tea")

    # Then the rules chose the first agent and the stop, the routing agent the two between
    assert network.states(run_id) == AFTER_EACH
    decisions = network.steps(run_id, "route")
    assert [(d["next"], d["by"]) for d in decisions] == [
        ("researcher", "rules"), ("writer", "agent"), ("reviewer", "agent"), (None, "rules"),
    ]  # fmt: skip
    assert decisions[1]["reason"].startswith("rule 3: always -> agent; "), decisions[1]


def test_max_iterations_stops_a_network_that_would_loop(network: NetworkRig) -> None:
    # Given a network whose rules always pick the writer, at most two iterations
    network.declare_agent("writer")
    network.declare_network(
        "loop",
        "---\ndescription: Loops.\nagents: [writer]\nrouter: {kind: rules, rules: [{then: writer}]}"
        "\nmax_iterations: 2\n---\n",
    )
    network.agent.model.script(Reply.answer("Once."), Reply.answer("Twice."))

    # When it runs
    run_id = network.start("loop", "Write")

    # Then the writer ran twice, and the run says the limit stopped it
    out = network.record(run_id).result
    assert (out["iterations"], out["answer"]) == (2, "Twice."), out
    assert out["stopped"] == "max_iterations (2) reached"
    assert len(network.agent.model.requests) == 2


SEEN: list[tuple[dict[str, Any], str | None, int]] = []


@router("test-triage")
def _triage(state: dict[str, Any], last: AgentResult | None, iteration: int) -> str | None:
    SEEN.append((state, last.agent if last else None, iteration))
    return None if state.get("done") else "coder"


def test_python_router_gets_state_last_result_and_iteration(network: NetworkRig) -> None:
    # Given a Python router registered by trusted code, and a coder that finishes the task
    SEEN.clear()
    network.declare_agent("coder")
    network.declare_network(
        "triage",
        "---\ndescription: Triage.\nagents: [coder]\nrouter: {kind: python, name: test-triage}\n"
        "---\n",
    )
    network.agent.model.script(
        Reply.tool("state_set", {"key": "done", "value": True}), Reply.answer("Fixed.")
    )

    # When the network runs
    run_id = network.start("triage", "Fix the bug")

    # Then the router was asked twice, with what it needed, and stopped the network
    assert SEEN == [({}, None, 0), ({"done": True}, "coder", 1)]
    assert network.record(run_id).result["stopped"] == "test-triage stopped"


def test_routing_agent_calls_count_toward_the_budget_and_a_used_up_one_stops_the_network(
    network: NetworkRig,
) -> None:
    # Given a 1,000-token daily budget per agent, and a routing agent whose first call
    # uses it up for the network's own scope (agent "essay")
    rig = network.agent
    rig.deps = build_deps(
        make_settings(rig.workspace, rig.model, budget_daily_tokens_per_agent=1_000)
    )
    set_agent_deps(rig.deps)
    _trio(network)
    network.declare_network(
        "essay",
        f"---\ndescription: Writes a checked essay.\n{TRIO}router: {{kind: agent}}\n{SCHEMA}---\n",
    )
    rig.model.script(
        Reply.tool("route", {"next": "researcher", "reason": "first"}, input_tokens=1_000),
        Reply.tool("state_set", {"key": "facts", "value": ["tea is old"]}),
        Reply.answer("Found one fact."),
    )

    # When the network runs
    run_id = network.start("essay", "An essay on tea")

    # Then the routing call was counted, and the next routing decision stopped the network
    # before asking the model, the budget's message as the reason
    (essay,) = spend_store(rig.runtime).read(utc_day(rig.runtime.now_ms()), [("agent", "essay")])
    assert essay.tokens >= 1_000, essay
    decisions = network.steps(run_id, "route")
    assert [d["next"] for d in decisions] == ["researcher"]
    assert network.record(run_id).result["iterations"] == 1
    assert len(rig.model.requests) == 3
    assert "agent essay (1,000 tokens) is used up" in str(network.record(run_id).result), (
        network.record(run_id).result
    )


def test_on_the_gateway_path_the_routing_agent_parks_the_network_until_the_gateway_answers(
    network: NetworkRig,
) -> None:
    # Given offloaded model calls, no gateway yet, and a routed network
    settings = make_settings(network.agent.workspace, network.agent.model, model_calls="gateway")
    set_agent_deps(build_deps(settings))
    network.agent.runtime.call_servers.clear()
    _trio(network)
    network.declare_network("essay", f"---\ndescription: x\n{TRIO}router: {{kind: agent}}\n---\n")
    network.agent.model.script(Reply.tool("route", {"next": "stop", "reason": "nothing to do"}))
    # When it runs
    run_id = network.start("essay", "Anything")
    # Then it waits on the routing agent's call, which nobody has made yet
    assert network.record(run_id).status == "waiting"
    assert network.agent.model.requests == []
    # When a gateway makes it
    assert ModelGateway(network.agent.runtime, settings).serve_due() == 1
    drain(network.agent.runtime)
    # Then the network ends as the routing agent decided
    assert network.record(run_id).status == "completed"
    [decision] = network.steps(run_id, "route")
    assert (decision["next"], decision["reason"]) == (None, "nothing to do"), decision
