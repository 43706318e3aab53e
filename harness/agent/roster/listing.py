"""What `harness agents` shows: every agent as it would run, the networks chats are bound to,
and what is wrong with them.

    table = agents_table(settings, roster, fleet, sub_agent, mcp_servers, networks=networks)

Built from files and settings alone: no model client, no MCP server started. An MCP tool
(`server__tool`) an agent lists counts as known when its server is configured; whether the
server really offers it is only known once it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from harness.agent.roster.bindings import (
    OPERATOR,
    Bound,
    Target,
    describe,
    file_bindings,
    overlaps,
    parse_bindings,
)
from harness.agent.roster.load import Roster
from harness.agent.roster.spec import DEFAULT_AGENT, AgentSpec
from harness.llm.factory import DEFAULT_MODELS
from harness.settings import Settings

if TYPE_CHECKING:
    from harness.agent.networks.load import Networks

DEFAULT_DESCRIPTION = "The default agent: SOUL.md and USER.md; answers every chat not bound."


class BindingRow(BaseModel):
    """Where the agent answers (`channel[@team][:chat_id[:sender]]`), and who said so."""

    where: str
    source: str


class AgentRow(BaseModel):
    """One agent as it would run."""

    name: str
    description: str
    provider: str
    model: str
    tools: list[str]
    unknown_tools: list[str]
    max_turns: int
    temperature: float | None
    max_tokens: int
    tool_choice: str | None = None
    """Its file's `tool_choice` (`auto`, `any`, `none`); None: the provider's default."""
    bindings: list[BindingRow]
    path: str
    """Its file, workspace-relative; "" for the default agent."""


class NetworkRow(BaseModel):
    """A network that loaded, and the chats bound to it (a chat bound to a network has the
    network answer: `harness.agent.networks.chat`)."""

    name: str
    description: str
    agents: list[str]
    bindings: list[BindingRow]
    path: str


class AgentsTable(BaseModel):
    """Every agent, every network with its bindings, the agent files that declare none
    (`file:line: message`), and warnings: tools an agent lists that the fleet lacks, ties
    between bindings, bindings to missing agents or networks."""

    agents: list[AgentRow]
    networks: list[NetworkRow] = []
    errors: list[str]
    warnings: list[str]


def agents_table(
    settings: Settings,
    roster: Roster,
    fleet: Sequence[str],
    sub_agent: Sequence[str],
    mcp_servers: Sequence[str],
    networks: Networks | None = None,
) -> AgentsTable:
    """The table for `roster` (and the `networks` that loaded) under `settings`: `fleet` is
    the default agent's tools but MCP's, `sub_agent` those of an agent whose file lists none,
    `mcp_servers` the configured servers' names. Never raises for a bad binding text:
    settings validated it when they loaded."""
    operator = parse_bindings(settings.agent_bindings)
    bound = [*operator, *file_bindings(roster, networks)]
    mcp = tuple(f"{server}__" for server in mcp_servers)
    rows = [_default_row(settings, fleet, mcp_servers, operator)]
    warnings: list[str] = []
    for name in roster.names():
        spec = roster.get(name)
        if spec is None:
            continue
        row = _row(settings, spec, fleet, sub_agent, mcp, bound)
        rows.append(row)
        if row.unknown_tools:
            missing = ", ".join(row.unknown_tools)
            warnings.append(f"{spec.path}: tools the fleet does not offer, left out: {missing}")
    nets = [] if networks is None else [networks.networks[n] for n in networks.names()]
    known = {
        *(Target(name) for name in (DEFAULT_AGENT, *roster.names())),
        *(Target(net.name, "network") for net in nets),
    }
    for binding in operator:
        if binding.target not in known:
            what = "network that loads" if binding.target.is_network else "agent"
            warnings.append(
                f"{OPERATOR}: {binding} names no {what}; the default agent answers there"
            )
    warnings += overlaps(bound)
    network_rows = [
        NetworkRow(
            name=net.name, description=net.description, agents=list(net.agents),
            bindings=_bindings_of(Target(net.name, "network"), bound), path=net.path,
        )
        for net in nets
    ]  # fmt: skip
    return AgentsTable(
        agents=rows,
        networks=network_rows,
        errors=[str(error) for error in roster.errors],
        warnings=warnings,
    )


def _default_row(
    settings: Settings, fleet: Sequence[str], mcp_servers: Sequence[str], operator: Sequence[Bound]
) -> AgentRow:
    mcp = [f"{server}__*" for server in mcp_servers]
    return AgentRow(
        name=DEFAULT_AGENT,
        description=DEFAULT_DESCRIPTION,
        provider=settings.llm_provider,
        model=settings.agent_model or DEFAULT_MODELS[settings.llm_provider],
        tools=[*fleet, *mcp],
        unknown_tools=[],
        max_turns=settings.agent_max_iterations,
        temperature=None,
        max_tokens=settings.agent_max_tokens,
        bindings=_bindings_of(Target(DEFAULT_AGENT), operator),
        path="",
    )


def _row(
    settings: Settings,
    spec: AgentSpec,
    fleet: Sequence[str],
    sub_agent: Sequence[str],
    mcp: tuple[str, ...],
    bound: Sequence[Bound],
) -> AgentRow:
    wanted = list(spec.tools) if spec.tools is not None else list(sub_agent)
    offered = set(fleet)
    provider = spec.provider or settings.llm_provider
    same_provider = provider == settings.llm_provider
    model = spec.model or (settings.agent_model if same_provider else None)
    return AgentRow(
        name=spec.name,
        description=spec.description,
        provider=provider,
        model=model or DEFAULT_MODELS[provider],
        tools=[t for t in wanted if t in offered or t.startswith(mcp)],
        unknown_tools=[t for t in wanted if t not in offered and not t.startswith(mcp)],
        max_turns=spec.max_turns or settings.agent_max_iterations,
        temperature=spec.temperature,
        max_tokens=spec.max_tokens or settings.agent_max_tokens,
        tool_choice=spec.tool_choice,
        bindings=_bindings_of(Target(spec.name), bound),
        path=spec.path,
    )


def _bindings_of(target: Target, bound: Sequence[Bound]) -> list[BindingRow]:
    return [
        BindingRow(where=describe(b.binding), source=b.source) for b in bound if b.target == target
    ]
