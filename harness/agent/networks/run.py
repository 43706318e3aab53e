"""`agent-network`: a network run on the bus, triggered by `agent.network.run`.

    router step -> the chosen agent, a child run (`agent-sub-agent`) -> its state writes
    merged in a step -> router step -> ... until the router stops or `max_iterations`

Every part is a durable step of the run (the network file read once, each decision, each
child, each merge), so a worker that dies mid-network resumes where it was: finished agents
are not run again, a child that was running resumes on its own. The answer is the last
agent's; it goes to `reply` when the event names one (and, said outside the chat's turn, joins
the chat's transcript: `proactive`), and is the run's output with the final state. The state
after each agent is the output of that iteration's "state" step, so `harness runs show`
shows it.

The agents a network runs are the workspace's named agents, each with the tools its file
allows and every call through the approval gate (asked in `ask_in`'s chat, else `reply`'s),
plus the state tools.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.agent.delegation import SUBAGENT_FUNCTION
from harness.agent.deps import agent_deps
from harness.agent.networks.decisions import AgentResult
from harness.agent.networks.load import workspace_networks
from harness.agent.networks.router import route
from harness.agent.networks.spec import NetworkSpec
from harness.agent.networks.state import StateUpdate, applied, check_state
from harness.agent.proactive import send_reply
from harness.agent.roster import load_roster
from harness.agent.untrusted import new_id, wrap
from harness.errors import StepFailedError
from harness.events import (
    NETWORK_HANDLER,
    NETWORK_RUN,
    NetworkRun,
    ReplyTarget,
    SharedState,
)
from harness.events import SubagentTask as Task
from harness.runtime import Context, Runtime, event, function

NETWORK_FUNCTION = NETWORK_HANDLER
CHILD_TIMEOUT = "30m"
EARLIER_CHARS = 4_000
"""How much of each earlier answer an agent is shown (the whole is in the run's output)."""


@function(id=NETWORK_FUNCTION, trigger=event(NETWORK_RUN), retries=1)
def run_network(ctx: Context) -> dict[str, Any]:
    """Run a network on a task (see the module docstring). Its data is a `NetworkRun`; other
    data fails the run at once (`InvalidEventDataError`). A network that does not load, or a
    starting state that breaks its schema, ends the run with the reason as its answer."""
    deps = agent_deps()
    data = NetworkRun.from_event(ctx.event)
    task = data.task.strip() or "(no task given)"
    loaded = ctx.step.run("network", read_network, deps.workspace, data.network, ctx.runtime)
    if "error" in loaded:
        return _finish(ctx, data.reply, str(loaded["error"]), data.state, [], loaded["error"])
    spec = NetworkSpec.model_validate(loaded["spec"])
    problem = check_state(spec.state, data.state)
    if problem is not None:
        why = f"(The starting state does not fit the network's schema: {problem})"
        return _finish(ctx, data.reply, why, data.state, [], why)
    state, results, turns = dict(data.state), list[AgentResult](), list[dict[str, Any]]()
    stopped = f"max_iterations ({spec.max_iterations}) reached"
    read_outside: str | None = None
    while len(results) < spec.max_iterations:
        where = data.ask_in or data.reply
        decision = route(ctx, deps, spec, loaded["agents"], task, state, results, where)
        if decision.next is None:
            stopped = decision.reason
            break
        shared = SharedState(network=spec.name, state_schema=spec.state, data=state)
        brief = _brief(ctx, spec, task, state, results, read_outside)
        asks = data.ask_in or data.reply
        result, updates, read = _run_agent(ctx, decision.next, brief, shared, asks)
        read_outside = read_outside or read
        merged = ctx.step.run("state", merge, spec.state, state, updates)
        state = merged["state"]
        results.append(result)
        turns.append(
            {"agent": result.agent, "reason": decision.reason, "failed": result.failed,
             "refused": merged["refused"]}
        )  # fmt: skip
    answer = results[-1].answer if results else f"(No agent ran: {stopped}.)"
    return _finish(ctx, data.reply, answer, state, turns, stopped)


def read_network(workspace: Path, name: str, runtime: Runtime) -> dict[str, Any]:
    """The network `name` (a file's, or a `@network` the sidecar registered) as JSON with its
    agents' descriptions, or `{"error": why}`."""
    roster = load_roster(workspace)
    networks = workspace_networks(workspace, runtime, roster)
    spec = networks.get(name)
    if spec is None:
        failed = [
            str(e) for e in networks.errors
            if e.path == f"networks/{name}.md" or repr(name) in e.message
        ]  # fmt: skip
        why = f"it does not load: {failed[0]}" if failed else "there is none"
        return {"error": f"(The network {name!r} cannot run: {why}.)"}
    agents = {a: spec_.description for a in spec.agents if (spec_ := roster.get(a)) is not None}
    return {"spec": spec.model_dump(mode="json", exclude_unset=True), "agents": agents}


def merge(
    schema: Mapping[str, Any], state: Mapping[str, Any], updates: list[dict[str, Any]]
) -> dict[str, Any]:
    """The state after an agent's writes, and the writes refused (checked again here)."""
    merged, refused = applied(schema, state, [StateUpdate.model_validate(u) for u in updates])
    return {"state": merged, "refused": refused}


def _run_agent(
    ctx: Context, name: str, brief: str, shared: SharedState, ask_in: ReplyTarget | None
) -> tuple[AgentResult, list[dict[str, Any]], str | None]:
    """One agent of the network as a child run (asking approvals in `ask_in`): its result,
    its state writes, and the outside content it read (None: none)."""
    task = Task(task=brief, agent=name, ask_in=ask_in, network_state=shared)
    try:
        out = ctx.step.invoke(
            "agent", SUBAGENT_FUNCTION, task.model_dump(mode="json", exclude_none=True),
            timeout=CHILD_TIMEOUT,
        )  # fmt: skip
    except StepFailedError as exc:
        return AgentResult(agent=name, answer=f"(failed: {exc.error})", failed=True), [], None
    answer = str(out.get("answer", ""))
    return (
        AgentResult(agent=name, answer=answer),
        list(out.get("state_updates", [])),
        (out.get("read_outside") or None),
    )


def _brief(
    ctx: Context,
    spec: NetworkSpec,
    task: str,
    state: Mapping[str, Any],
    results: Sequence[AgentResult],
    read_outside: str | None,
) -> str:
    """What the next agent is told: the task, the shared state, the earlier answers. When an
    earlier agent read outside content, the state and the answers are wrapped as untrusted
    (they may carry it), which makes the next agent's risky calls ask."""
    shown = [f"Shared state (state_get reads it, state_set changes it):\n{_json(state)}"]
    for index, result in enumerate(results, 1):
        answer = result.answer.strip() or "(nothing)"
        cut = answer if len(answer) <= EARLIER_CHARS else answer[:EARLIER_CHARS] + " [...]"
        shown.append(f"[{index}] {result.agent} answered:\n{cut}")
    context = "\n\n".join(shown)
    if read_outside:
        source = f"earlier agents of the network (one read {read_outside})"
        context = wrap(context, source, ctx.step.run("untrusted-id", new_id))
    return (
        f"You are one agent of the network {spec.name!r}: {spec.description}\n"
        f"The network's task:\n{task}\n\n{context}\n\n"
        "Do your part of the task, then answer with your result."
    )


def _finish(
    ctx: Context,
    reply: ReplyTarget | None,
    answer: str,
    state: Mapping[str, Any],
    turns: list[dict[str, Any]],
    stopped: str,
) -> dict[str, Any]:
    send_reply(ctx, answer, reply, source="network")
    return {
        "answer": answer, "state": dict(state), "iterations": len(turns), "stopped": stopped,
        "turns": turns,
    }  # fmt: skip


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(dict(value), indent=1, sort_keys=True, ensure_ascii=False)
