"""A router the agent wrote: a durable function of the workspace's `functions/` folder.

    # workspace/functions/triage.py (served by the sidecar, in its sandbox)
    @function(id="router-triage", trigger=event("router/triage"))
    def triage(ctx):
        data = ctx.event.data  # {"state", "last": {"agent", "answer", "failed"} | None,
                               #  "iteration", "agents"}
        return {"next": "coder" if data["state"].get("kind") == "bug" else None,
                "reason": "bugs go to the coder"}

A network names it with `router: {kind: function, id: router-triage}`. Each decision is three
steps of the network run: "router-function" checks that the id is one the sidecar registered
from `functions/` (a network file is the agent's to write, so it must not name one of the
fleet's functions, which trust their event's data), "route-call" invokes it
(`ctx.step.invoke`, `ROUTER_TIMEOUT`), and "route" records the `Decision` read from its
answer. The invoke runs wherever the function is served, the sidecar's sandboxed host: no
workspace code runs in the worker. An answer that is not `{"next": <agent> | null | "stop",
"reason": ...}`, an agent not of the network, a failed or timed-out call all stop the
network, the reason recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from harness.agent.networks.decisions import AgentResult, Decision
from harness.agent.networks.spec import STOP, FunctionRouter, NetworkSpec
from harness.errors import StepFailedError
from harness.runtime.function_sources import is_workspace_function

if TYPE_CHECKING:
    from harness.runtime.steps import Context

ROUTER_TIMEOUT = "60s"
"""How long one decision may take; a router function that has not answered by then stops
the network."""
ANSWER_CHARS = 8_000
"""How much of the last agent's answer the router function gets."""
REASON_CHARS = 300


def route_by_function(
    ctx: Context,
    spec: NetworkSpec,
    router: FunctionRouter,
    state: Mapping[str, Any],
    results: Sequence[AgentResult],
) -> Decision:
    """The decision of the router function for this iteration (see the module). Never
    raises for what the function does; a replay returns the recorded decision."""
    if not ctx.step.run("router-function", is_workspace_function, ctx.runtime, router.id):
        return _recorded(ctx, f"{router.id!r} is not a function of the workspace's functions/")
    request = {
        "state": dict(state),
        "last": _last(results),
        "iteration": len(results),
        "agents": list(spec.agents),
    }
    try:
        answer = ctx.step.invoke("route-call", router.id, request, timeout=ROUTER_TIMEOUT)
    except StepFailedError as exc:
        return _recorded(ctx, f"the router function {router.id} failed: {exc.error}")
    decision = read_answer(router.id, answer, spec.agents)
    return Decision.model_validate(ctx.step.run("route", lambda: decision.model_dump()))


def read_answer(function_id: str, answer: Any, agents: Sequence[str]) -> Decision:
    """The decision a router function's answer makes: `next` an agent of the network, or
    None / "stop" to stop; anything else stops, saying what was wrong."""
    if not isinstance(answer, dict) or "next" not in answer:
        shown = repr(answer)[:100]
        return _stop(f"{function_id} answered {shown}, not {{'next': ..., 'reason': ...}}")
    chosen, reason = answer["next"], " ".join(str(answer.get("reason") or "").split())
    reason = reason[:REASON_CHARS] or "(no reason)"
    if chosen is None or chosen == STOP:
        return _stop(f"{function_id} stopped: {reason}")
    if not isinstance(chosen, str) or chosen not in agents:
        why = f"{function_id} chose {str(chosen)[:60]!r}, not an agent of this network: {reason}"
        return _stop(why)
    return Decision(next=chosen, reason=f"{function_id}: {reason}", by="function")


def _last(results: Sequence[AgentResult]) -> dict[str, Any] | None:
    if not results:
        return None
    last = results[-1]
    return {"agent": last.agent, "answer": last.answer[:ANSWER_CHARS], "failed": last.failed}


def _stop(reason: str) -> Decision:
    return Decision(next=None, reason=reason, by="function")


def _recorded(ctx: Context, reason: str) -> Decision:
    """A stop, recorded as this iteration's "route" step like any decision."""
    return Decision.model_validate(ctx.step.run("route", lambda: _stop(reason).model_dump()))
