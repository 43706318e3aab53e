"""The routing agent: one model call that picks the network's next agent, or stops.

The model is offered one tool, `route` (`next`: an agent's name or "stop", `reason`), and the
call forces it (`tool_choice="route"`). A model or server that ignores the choice may still
answer in text: that answer stops the network, its text recorded as the reason. A name that
is not one of the network's agents stops it too, with the reason saying so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.agent.model_calls import ModelCall
from harness.agent.networks.decisions import AgentResult, Decision
from harness.agent.networks.spec import STOP, NetworkSpec
from harness.llm.types import AssistantTurn, Message, ToolSpec

ROUTE_TOOL = "route"
ANSWER_CHARS = 1_500
"""How much of each earlier answer the routing agent is shown."""
SHOWN_RESULTS = 6
GUIDE = (
    "You route the work of a network of agents. Each time you are asked, pick the agent that "
    "should act next, or stop when the task is done or no agent can help further. Always "
    f'answer by calling the `{ROUTE_TOOL}` tool, once, with the agent\'s name (or "stop") '
    "and a one-line reason."
)


def route_spec(agents: Sequence[str]) -> ToolSpec:
    """The `route` tool, its `next` limited to the network's agents and "stop"."""
    return ToolSpec(
        name=ROUTE_TOOL,
        description="Choose the agent that acts next, or stop the network.",
        parameters={
            "type": "object",
            "properties": {
                "next": {"type": "string", "enum": [*agents, STOP]},
                "reason": {"type": "string", "description": "Why, in one line."},
            },
            "required": ["next", "reason"],
        },
    )


def ask_routing_agent(
    complete: Callable[[ModelCall], AssistantTurn],
    spec: NetworkSpec,
    descriptions: Mapping[str, str],
    task: str,
    state: Mapping[str, Any],
    results: Sequence[AgentResult],
) -> tuple[Decision, AssistantTurn]:
    """The routing agent's decision, and the model's turn it came from (its usage, for the
    budget), its call made by `complete` (`model_calls.call_model`, bound to the step and
    provider). Raises the model layer's errors (the caller's step retries the transient
    ones)."""
    system = f"{GUIDE}\n\n{spec.instructions}".strip()
    prompt = routing_prompt(spec, descriptions, task, state, results)
    turn = complete((system, [Message.user(prompt)], [route_spec(spec.agents)], ROUTE_TOOL))
    return _decision(spec, turn), turn


def _decision(spec: NetworkSpec, turn: AssistantTurn) -> Decision:
    call = next((c for c in turn.tool_calls if c.name == ROUTE_TOOL), None)
    if call is None:
        said = " ".join(turn.text.split())[:200] or "nothing"
        return Decision(next=None, reason=f"the routing agent did not route: {said}", by="agent")
    chosen = str(call.arguments.get("next", "")).strip()
    reason = " ".join(str(call.arguments.get("reason", "")).split())[:300] or "(no reason)"
    if chosen == STOP:
        return Decision(next=None, reason=reason, by="agent")
    if chosen not in spec.agents:
        why = f"the routing agent chose {chosen[:60]!r}, not an agent of this network: {reason}"
        return Decision(next=None, reason=why, by="agent")
    return Decision(next=chosen, reason=reason, by="agent")


def routing_prompt(
    spec: NetworkSpec,
    descriptions: Mapping[str, str],
    task: str,
    state: Mapping[str, Any],
    results: Sequence[AgentResult],
) -> str:
    """What the routing agent is shown: the task, the agents, the state, the latest results."""
    agents = "\n".join(f"- {name}: {descriptions.get(name, '')}" for name in spec.agents)
    lines = [
        f"Network: {spec.name} ({spec.description})",
        f"Task:\n{task}",
        f"Agents:\n{agents}",
        f"Shared state:\n{json.dumps(dict(state), indent=1, sort_keys=True)}",
        f"Agents run so far: {len(results)} of at most {spec.max_iterations}.",
    ]
    for result in results[-SHOWN_RESULTS:]:
        lines.append(f"{result.agent} answered:\n{_cut(result.answer)}")
    lines.append(f"Call `{ROUTE_TOOL}` now.")
    return "\n\n".join(lines)


def _cut(text: str) -> str:
    text = text.strip() or "(nothing)"
    return text if len(text) <= ANSWER_CHARS else text[:ANSWER_CHARS] + " [...]"
