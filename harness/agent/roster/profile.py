"""What a turn of one agent runs with: its model, its tools, its limits, its instructions.

    profile = profiles.get(deps, "researcher")   # None: no such agent
    turn = DurableTurn(ctx, deps, registry=profile.tools, profile=profile, ...)

The default agent's profile is the fleet's: `AGENT_MODEL` and its fallback, every tool the
operator allows, `AGENT_MAX_ITERATIONS`, `SOUL.md`. A named agent's (`AgentSpec`) starts from
it and can only narrow it: its tools are picked from the fleet's (bash only where the operator
allows a shell; an unknown name is left out and reported by `unknown_tools`), and its model
is one of the providers the operator configured.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.agent.roster.load import load_roster
from harness.agent.roster.spec import DEFAULT_AGENT, AgentSpec
from harness.llm.factory import build_fallback_provider, build_provider
from harness.llm.provider import ModelProvider
from harness.llm.types import ToolSpec
from harness.tools.base import ToolRegistry

if TYPE_CHECKING:
    from harness.agent.deps import AgentDeps
    from harness.runtime.steps import Context

FALLBACK_FROM_ATTEMPT = 2
"""From which attempt (0-based) of a model step the fallback model takes over."""


@dataclass(frozen=True)
class AgentProfile:
    """One agent, ready to run. `spec` is None for the default agent."""

    name: str
    spec: AgentSpec | None
    provider: ModelProvider | None
    fallback: ModelProvider | None
    tools: ToolRegistry
    max_turns: int
    unknown_tools: tuple[str, ...] = ()

    def provider_for(self, attempt: int) -> ModelProvider:
        """The model for a step's `attempt` (0-based): the fallback from the third attempt
        when there is one, else the primary. Call only when `provider` is set."""
        assert self.provider is not None, "no model is configured"
        if self.fallback is not None and attempt >= FALLBACK_FROM_ATTEMPT:
            return self.fallback
        return self.provider

    @property
    def instructions(self) -> str | None:
        """A named agent's instructions (its file's body); None for the default agent, whose
        identity is `SOUL.md`."""
        return None if self.spec is None else self.spec.instructions

    def tool_choice_for(self, tools: Sequence[ToolSpec]) -> str | None:
        """The `tool_choice` of a loop's model call offering `tools`: the agent file's, or None
        (nothing sent) for the default agent and for a call without tools (the last
        iteration, which must answer)."""
        if self.spec is None or not tools:
            return None
        return self.spec.tool_choice


def default_profile(deps: AgentDeps) -> AgentProfile:
    """The default agent: the fleet's model, every tool, `AGENT_MAX_ITERATIONS`."""
    return AgentProfile(
        name=DEFAULT_AGENT,
        spec=None,
        provider=deps.provider,
        fallback=deps.fallback,
        tools=deps.tools,
        max_turns=deps.settings.agent_max_iterations,
    )


_cache: dict[tuple[int, str], AgentProfile] = {}
_cache_lock = threading.Lock()


def run_profile(ctx: Context, deps: AgentDeps, name: str | None) -> AgentProfile | None:
    """The profile a run of agent `name` uses (the default agent's for None or
    `DEFAULT_AGENT`), or None when the workspace declares no such agent. The file is read in
    a durable step ("agent"), so a replayed run uses the version its first execution read."""
    if name is None or name == DEFAULT_AGENT:
        return default_profile(deps)

    def read() -> dict[str, Any] | None:
        spec = load_roster(deps.workspace).get(name)
        return None if spec is None else spec.model_dump(mode="json")

    raw = ctx.step.run("agent", read)
    return None if raw is None else profile_for(deps, AgentSpec.model_validate(raw))


def profile_for(deps: AgentDeps, spec: AgentSpec) -> AgentProfile:
    """The profile of a named agent, built once per process for each version of its file
    (model clients keep their connection pools)."""
    key = (id(deps), spec.model_dump_json())
    with _cache_lock:
        found = _cache.get(key)
    if found is not None:
        return found
    built = _build(deps, spec)
    with _cache_lock:
        if len(_cache) > 200:
            _cache.clear()
        return _cache.setdefault(key, built)


def _build(deps: AgentDeps, spec: AgentSpec) -> AgentProfile:
    settings = deps.settings
    wanted = spec.tools if spec.tools is not None else tuple(deps.subagent_tools.names())
    offered = set(deps.tools.names())
    unknown = tuple(name for name in wanted if name not in offered)
    provider, fallback = deps.provider, deps.fallback
    if _changes_model(spec):
        models = settings.model_copy(update=_model_settings(settings, spec))
        provider = build_provider(models, temperature=spec.temperature)
        fallback = build_fallback_provider(models, temperature=spec.temperature)
    return AgentProfile(
        name=spec.name,
        spec=spec,
        provider=provider,
        fallback=fallback,
        tools=deps.tools.narrowed(wanted),
        max_turns=spec.max_turns or settings.agent_max_iterations,
        unknown_tools=unknown,
    )


def _changes_model(spec: AgentSpec) -> bool:
    return any(
        value is not None
        for value in (spec.model, spec.provider, spec.fallback_model, spec.fallback_provider,
                      spec.max_tokens, spec.temperature)
    )  # fmt: skip


def _model_settings(settings: Any, spec: AgentSpec) -> dict[str, Any]:
    """The model settings an agent's file overrides. A new provider without a model gets that
    provider's default model, not the fleet's (which may belong to another provider)."""
    update: dict[str, Any] = {}
    if spec.provider is not None and spec.provider != settings.llm_provider:
        update["llm_provider"], update["agent_model"] = spec.provider, None
    if spec.model is not None:
        update["agent_model"] = spec.model
    if spec.fallback_provider is not None:
        update["fallback_llm_provider"] = spec.fallback_provider
    if spec.fallback_model is not None:
        update["fallback_agent_model"] = spec.fallback_model
    if spec.max_tokens is not None:
        update["agent_max_tokens"] = spec.max_tokens
    return update
