"""One routing decision of a network run, as one durable step ("route").

The step runs the network's router (rules, sequence, a Python router, the routing agent, or
rules that hand over to it) and records its `Decision`: a replay returns the recorded
decision, so a resumed network goes where it went before, whatever the router would say now.
A function router (one the agent wrote, served by the sidecar) is invoked in a step of its
own, then its decision is recorded the same way (`function_router`).
A router that fails (a Python router that raises, a model that keeps failing) stops the
network, the failure as the reason.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

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
from harness.agent.roster.profile import default_profile, profile_for
from harness.agent.roster.spec import AgentSpec
from harness.errors import StepFailedError
from harness.llm.provider import ModelProvider

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
) -> Decision:
    """The next agent (or stop) and why, decided once per run and iteration."""
    if isinstance(spec.router, FunctionRouter):
        return route_by_function(ctx, spec, spec.router, state, results)
    decider = _Decider(ctx, deps, spec, descriptions, task)

    def decide() -> dict[str, Any]:
        return decider.decide(state, results).model_dump(mode="json")

    try:
        return Decision.model_validate(ctx.step.run("route", decide))
    except StepFailedError as exc:
        return Decision(next=None, reason=f"the router failed: {exc.error}", by=_by(spec))


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
        return ask_routing_agent(
            provider, self.spec, self.descriptions, self.task, state, results, self.ctx.cancelled
        )

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
