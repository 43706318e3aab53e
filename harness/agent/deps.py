"""What an agent run needs from its process: settings, model providers, tools, workspace.

Built once per process on first use (model SDK clients keep their connection pools), and
reset by tests that change the settings.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from harness.agent.delegation import (
    DelegateAsyncTaskTool,
    DelegateScheduledTaskTool,
    DelegateTaskTool,
)
from harness.agent.remember_tool import RememberTool
from harness.agent.session import SessionStore
from harness.agent.workspace import default_shipped_skills, default_template, ensure_workspace
from harness.llm.factory import build_fallback_provider, build_provider
from harness.llm.provider import ModelProvider
from harness.llm.types import ToolSpec
from harness.settings import Settings, get_settings
from harness.sidecar.tool_check import check_function_writes
from harness.tools import default_registry
from harness.tools.base import ToolRegistry

_lock = threading.Lock()
_deps: AgentDeps | None = None


@dataclass(frozen=True)
class AgentDeps:
    """The process-wide dependencies of agent runs. `provider` is None when no model is set up."""

    settings: Settings
    workspace: Path
    provider: ModelProvider | None
    fallback: ModelProvider | None
    tools: ToolRegistry
    subagent_tools: ToolRegistry
    sessions: SessionStore

    def tool_specs(self, registry: ToolRegistry) -> list[ToolSpec]:
        """The registry's tools in the model layer's shape."""
        return [
            ToolSpec(name=s.name, description=s.description, parameters=s.parameters)
            for s in registry.specs()
        ]


def build_deps(settings: Settings) -> AgentDeps:
    """Build the dependencies from settings and make sure the workspace exists."""
    workspace = settings.agent_workspace.resolve()
    ensure_workspace(workspace, default_template(), default_shipped_skills())
    private = settings.agent_fetch_private_networks
    tools = default_registry(allow_shell=settings.agent_allow_shell, allow_private_fetch=private)
    tools.register(RememberTool())
    if settings.sidecar_enabled:
        check_function_writes(tools, settings)
    for delegation in (DelegateTaskTool(), DelegateAsyncTaskTool(), DelegateScheduledTaskTool()):
        tools.register(delegation)
    subagent_tools = default_registry(allow_shell=False, allow_private_fetch=private)
    subagent_tools.register(RememberTool())
    return AgentDeps(
        settings=settings,
        workspace=workspace,
        provider=build_provider(settings),
        fallback=build_fallback_provider(settings),
        tools=tools,
        subagent_tools=subagent_tools,
        sessions=SessionStore(workspace),
    )


def agent_deps() -> AgentDeps:
    """The process's dependencies, built on first use."""
    global _deps
    with _lock:
        if _deps is None:
            _deps = build_deps(get_settings())
        return _deps


def set_agent_deps(deps: AgentDeps | None) -> None:
    """Replace (or with None, forget) the process's dependencies. For tests and embedding."""
    global _deps
    with _lock:
        if _deps is not None and deps is not _deps:
            for provider in (_deps.provider, _deps.fallback):
                if provider is not None:
                    provider.close()
        _deps = deps
