"""The names of the tools an agent is offered, without importing the tools: what
`harness agents` lists (the registries themselves, `harness.agent.tool_sets`, import every
tool's module and what it runs with, ~0.1 s). A test holds each list to its registry's names.
"""

from __future__ import annotations

from harness.settings import Settings
from harness.tools.catalog import ToolSettings, tool_names_for

FLEET_OWN = (
    "remember",
    "search",
    "send_file",
    "delegate_task",
    "delegate_async_task",
    "delegate_scheduled_task",
)
"""What the fleet adds to the plug-ins' tools for the default agent, in `fleet_tools`' order."""
SIDECAR_OWN = ("functions_list", "function_run", "runs_show")
"""What it adds after them where the sidecar runs the agent's functions (SIDECAR_ENABLED)."""
SUB_AGENT_OWN = ("remember", "search", "send_file")
"""What it adds to the plug-ins' tools for a sub-agent, in `subagent_tools`' order."""


def fleet_tool_names(settings: Settings) -> list[str]:
    """`harness.agent.tool_sets.fleet_tools(settings).names()`, without building the tools
    (bash where `AGENT_ALLOW_SHELL`)."""
    plugged = ToolSettings(settings.agent_allow_shell, settings.agent_fetch_private_networks)
    own = FLEET_OWN + (SIDECAR_OWN if settings.sidecar_enabled else ())
    return [*tool_names_for(plugged), *own]


def subagent_tool_names(settings: Settings) -> list[str]:
    """`harness.agent.tool_sets.subagent_tools(settings).names()`, without building the
    tools (never bash)."""
    plugged = ToolSettings(False, settings.agent_fetch_private_networks)
    return [*tool_names_for(plugged), *SUB_AGENT_OWN]
