"""One routing decision of a network run, as one durable step ("route").

The step runs the network's router (rules, sequence, a Python router, the routing agent, or
rules that hand over to it) and records its `Decision`: a replay returns the recorded
decision, so a resumed network goes where it went before, whatever the router would say now.
A function router (one the agent wrote, served by the sidecar) is invoked in a step of its
own, then its decision is recorded the same way (`function_router`).
A router that fails (a Python router that raises, a model that keeps failing) stops the
network, the failure as the reason.

The routing agent's model call is checked and counted like any other (`budget_gate`): a
"budget" step before the "route" step of a router that may ask the model, a "spend" step
after it when it did; its spend counts toward the chat the network works for, the person
whose message started it, and the agent scope named for the network. A used-up budget stops
the network, the budget's message as the reason.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from harness.agent.budget_gate import BudgetGate, budget_gate, turn_scopes
from harness.agent.model_calls import call_model
from harness.agent.networks.code_routers import find_router
from harness.agent.networks.decisions import AgentResult, Decision, by_rules, by_sequence
from harness.agent.networks.function_router import route_by_function
from harness.agent.networks.routing_agent import ask_routing_agent
from harness.agent.networks.spec import (
    AgentRouter,
    FunctionRouter,
    NetworkSpec,
    PythonRouter,
    RulesRouter,
    SequenceRouter,
)
from harness.agent.proactive import send_reply
from harness.agent.roster.profile import default_profile, profile_for
from harness.agent.roster.spec import AgentSpec
from harness.agent.speakers import person_subject
from harness.errors import StepFailedError
from harness.events import ReplyTarget
from harness.llm.provider import ModelProvider
from harness.llm.types import AssistantTurn
from harness.records.spend import spend_store

if TYPE_CHECKING:
    from harness.agent.deps import AgentDeps
    from harness.runtime.steps import Context

ROUTING_AGENT = "router"
"""The name the routing agent's model settings go by (never an agent of the network)."""


def route(
    ctx: Context,
    deps: AgentDeps,
    spec: NetworkSpec,
    descriptions: Mapping[str, str],
    task: str,
    state: Mapping[str, Any],
    results: Sequence[AgentResult],
    where: ReplyTarget | None = None,
) -> Decision:
    """The next agent (or stop) and why, decided once per run and iteration. `where` is the
    chat the network works for (its budgets are checked; warnings go there)."""
    if isinstance(spec.router, FunctionRouter):
        return route_by_function(ctx, spec, spec.router, state, results)
    decider = _Decider(ctx, deps, spec, descriptions, task)
    gate = (
        _gate(ctx, deps, spec, where)
        if isinstance(spec.router, AgentRouter | RulesRouter)
        else None
    )
    stop = gate.check() if gate is not None else None
    if stop is not None:
        return Decision(next=None, reason=stop, by=_by(spec))

    def decide() -> dict[str, Any]:
        decision = decider.decide(state, results).model_dump(mode="json")
        call = decider.call  # the routing agent's model call, when it made one
        return decision if call is None else {**decision, _CALL: call.model_dump(mode="json")}

    try:
        raw = ctx.step.run("route", decide)
    except StepFailedError as exc:
        return Decision(next=None, reason=f"the router failed: {exc.error}", by=_by(spec))
    if gate is not None and _CALL in raw:
        call = AssistantTurn.model_validate(raw[_CALL])
        gate.count(call.model, call.usage)
    return Decision.model_validate(raw)


_CALL = "model_call"
"""The key of the "route" step's output holding the routing agent's model turn (its usage)."""


def _gate(
    ctx: Context, deps: AgentDeps, spec: NetworkSpec, where: ReplyTarget | None
) -> BudgetGate | None:
    person = person_subject(where.channel_meta.asker) if where is not None else None
    scopes = turn_scopes(person, where.session_key if where else None, spec.name)
    notify = (lambda text: send_reply(ctx, text, where)) if where is not None else None
    return budget_gate(ctx, deps.settings, lambda: spend_store(ctx.runtime), scopes, notify, where)


class _Decider:
    def __init__(
        self,
        ctx: Context,
        deps: AgentDeps,
        spec: NetworkSpec,
        descriptions: Mapping[str, str],
        task: str,
    ) -> None:
        self.ctx, self.deps, self.spec = ctx, deps, spec
        self.descriptions, self.task = descriptions, task
        self.call: AssistantTurn | None = None  # the routing agent's last model turn

    def decide(self, state: Mapping[str, Any], results: Sequence[AgentResult]) -> Decision:
        router, iteration = self.spec.router, len(results)
        if isinstance(router, SequenceRouter):
            return by_sequence(router, iteration)
        if isinstance(router, PythonRouter):
            return self._python(router, state, results)
        if isinstance(router, RulesRouter):
            decided = by_rules(router, state, results, iteration)
            if isinstance(decided, Decision):
                return decided
            chose = self._agent(router.model, state, results)
            return chose.model_copy(update={"reason": f"{decided.reason}; {chose.reason}"})
        if isinstance(router, FunctionRouter):  # `route` invokes it before any step runs here
            raise TypeError("a function router is invoked by route_by_function")
        return self._agent(router.model, state, results)

    def _python(
        self, router: PythonRouter, state: Mapping[str, Any], results: Sequence[AgentResult]
    ) -> Decision:
        fn = find_router(router.name)
        if fn is None:
            return Decision(
                next=None, reason=f"no Python router named {router.name!r}", by="python"
            )
        last = results[-1] if results else None
        chosen = fn(copy.deepcopy(dict(state)), last, len(results))
        if chosen is None:
            return Decision(next=None, reason=f"{router.name} stopped", by="python")
        if chosen not in self.spec.agents:
            why = f"{router.name} chose {str(chosen)[:60]!r}, not an agent of this network"
            return Decision(next=None, reason=why, by="python")
        return Decision(next=chosen, reason=f"{router.name} chose {chosen}", by="python")

    def _agent(
        self, model: str | None, state: Mapping[str, Any], results: Sequence[AgentResult]
    ) -> Decision:
        provider = self._provider(model)
        if provider is None:
            return Decision(next=None, reason="no model is configured", by="agent")
        offload = self.deps.settings.model_calls == "gateway"
        complete = partial(call_model, self.ctx, provider, offload)
        decision, self.call = ask_routing_agent(
            complete, self.spec, self.descriptions, self.task, state, results
        )
        return decision

    def _provider(self, model: str | None) -> ModelProvider | None:
        if model is None:
            profile = default_profile(self.deps)
        else:
            about = f"routes the network {self.spec.name}"
            profile = profile_for(
                self.deps, AgentSpec(name=ROUTING_AGENT, description=about, model=model)
            )
        return None if profile.provider is None else profile.provider_for(self.ctx.attempt)


def _by(spec: NetworkSpec) -> Any:
    router = spec.router
    return "agent" if isinstance(router, AgentRouter) else router.kind
