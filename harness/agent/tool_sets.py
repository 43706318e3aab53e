"""Which tools an agent is offered: the default agent's (the fleet's, but MCP's) and a
sub-agent's, built from settings alone.

Apart from `harness.agent.deps` (which adds the model, MCP and the sessions) so that
`harness agents` lists every agent's tools without importing what runs them: building these
registries starts nothing and touches no network.
"""

from __future__ import annotations

from harness.agent.delegation import (
    DelegateAsyncTaskTool,
    DelegateScheduledTaskTool,
    DelegateTaskTool,
)
from harness.agent.media.send_file import SendFileTool
from harness.agent.memory.remember import RememberTool
from harness.search.embeddings import embedder_from_settings
from harness.search.tool import INDEX_FILE, SearchTool
from harness.settings import Settings
from harness.state_dir import state_dir
from harness.tools import ShellPolicy, default_registry
from harness.tools.base import ToolRegistry
from harness.tools.function_run import FunctionRunTool
from harness.tools.functions_list import FunctionsListTool
from harness.tools.runs_show import RunsShowTool


def fleet_tools(settings: Settings, policy: ShellPolicy | None = None) -> ToolRegistry:
    """The default agent's tools but MCP's: built-in and plug-in tools (bash where
    `AGENT_ALLOW_SHELL`, confined by `policy`), remember, search, send_file, delegation and, where
    the sidecar runs the agent's functions (SIDECAR_ENABLED), functions_list, function_run
    and runs_show. Starts nothing (`harness agents` checks agents' tool lists against it)."""
    private_fetch = settings.agent_fetch_private_networks
    tools = default_registry(settings.agent_allow_shell, private_fetch, policy)
    tools.register(RememberTool())
    tools.register(search_tool(settings))
    tools.register(SendFileTool())
    for delegation in (DelegateTaskTool(), DelegateAsyncTaskTool(), DelegateScheduledTaskTool()):
        tools.register(delegation)
    if settings.sidecar_enabled:
        for own in (FunctionsListTool(), FunctionRunTool(), RunsShowTool()):
            tools.register(own)
    return tools


def search_tool(settings: Settings) -> SearchTool:
    """The search tool over the state folder's index, hybrid where `EMBEDDINGS_PROVIDER`
    names a provider."""
    return SearchTool(
        state_dir(settings) / INDEX_FILE,
        embedder_from_settings(settings),
        rescan=settings.search_rescan,
    )


def subagent_tools(settings: Settings) -> ToolRegistry:
    """A sub-agent's tools (and a named agent's whose file lists none): file tools, web_fetch,
    remember, search and send_file (into the parent's chat); never bash or MCP."""
    tools = default_registry(
        allow_shell=False, allow_private_fetch=settings.agent_fetch_private_networks
    )
    tools.register(RememberTool())
    tools.register(search_tool(settings))
    tools.register(SendFileTool())
    return tools
