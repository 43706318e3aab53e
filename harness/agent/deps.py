"""What an agent run needs from its process: settings, model providers, tools, workspace.

Built once per process on first use (model SDK clients keep their connection pools), and
reset by tests that change the settings. Closed when the process ends (`close_agent_deps`,
on Celery's `worker_shutdown` and at exit), so MCP servers started over stdio end with it.
"""

from __future__ import annotations

import atexit
import functools
import logging
import stat
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.access import announce_policy
from harness.agent.approvals.allowlist import announce_allowlist
from harness.agent.approvals.policy import ApprovalPolicy
from harness.agent.memory.scope import CHATS_DIR
from harness.agent.roster.profile import default_profile
from harness.agent.session import SessionStore
from harness.agent.shell_policy import shell_policy
from harness.agent.tool_sets import fleet_tools, subagent_tools
from harness.agent.workspace import default_shipped_skills, default_template, ensure_workspace
from harness.errors import ConfigurationError
from harness.llm.factory import build_fallback_provider, build_provider
from harness.llm.provider import ModelProvider
from harness.llm.types import ToolSpec
from harness.mcp import McpToolbox, adoption_advice, config_path, ignored_workspace_file
from harness.settings import Settings, get_settings
from harness.sidecar.tool_check import check_function_writes
from harness.state_dir import state_dir
from harness.tools import describe_sandbox
from harness.tools.base import Tool, ToolRegistry
from harness.workspace_files import UnsafePathError, lstat

logger = logging.getLogger(__name__)
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
    private: Path
    """Where conversations' private files live, outside the workspace (the state folder):
    `sessions/` (transcripts) and `memory/chats/` (per-chat memory)."""
    mcp: McpToolbox | None = None

    def close(self) -> None:
        """Stop the MCP servers (waiting for stdio servers' processes to end) and close the
        model clients. Idempotent; never raises."""
        if self.mcp is not None:
            self.mcp.close()
        for provider in (self.provider, self.fallback):
            if provider is not None:
                provider.close()

    def provider_for(self, attempt: int) -> ModelProvider:
        """The default agent's model for a step's `attempt` (0-based): see
        `harness.agent.roster.profile.AgentProfile.provider_for`."""
        return default_profile(self).provider_for(attempt)

    def tool_specs(self, registry: ToolRegistry) -> list[ToolSpec]:
        """The registry's tools in the model layer's shape: each tool's built once (its
        schema copied and validated again at every think was about 5 % of a worker's CPU in a
        wave of chats), and again when its name or description changes. The specs are shared:
        never change their `parameters`."""
        return [_model_spec(tool) for tool in registry.offered()]


_SPECS: weakref.WeakKeyDictionary[Tool[Any], ToolSpec] = weakref.WeakKeyDictionary()
_SPECS_LOCK = threading.Lock()


def _model_spec(tool: Tool[Any]) -> ToolSpec:
    """`tool` in the model layer's shape, from `_SPECS` when its name and description are
    those it was built with. A tool that cannot be a weak key (a plug-in's dataclass that
    compares by value is unhashable) is built afresh each time, as before the cache."""
    try:
        with _SPECS_LOCK:
            spec = _SPECS.get(tool)
    except TypeError:
        return _built_spec(tool)
    if spec is None or (spec.name, spec.description) != (tool.name, tool.description):
        spec = _built_spec(tool)
        with _SPECS_LOCK:
            _SPECS[tool] = spec
    return spec


def _built_spec(tool: Tool[Any]) -> ToolSpec:
    return ToolSpec(name=tool.name, description=tool.description, parameters=tool.json_schema())


def build_deps(settings: Settings) -> AgentDeps:
    """Build the dependencies from settings and make sure the workspace exists."""
    workspace = settings.agent_workspace.resolve()
    ensure_workspace(workspace, default_template(), default_shipped_skills())
    private = private_folder(settings, workspace)
    policy = shell_policy(settings)
    if settings.agent_allow_shell:
        logger.info("%s", describe_sandbox(policy))
    announce_policy(settings.dm_policy)
    approval = ApprovalPolicy.from_settings(settings.agent_approval, settings.agent_approval_allow)
    announce_allowlist(approval.allow)
    tools = fleet_tools(settings, policy)
    mcp = mcp_toolbox(settings)  # servers start on first use
    tools.attach(mcp)
    if settings.sidecar_enabled:
        check_function_writes(tools, settings)
    return AgentDeps(
        settings=settings,
        workspace=workspace,
        provider=build_provider(settings),
        fallback=build_fallback_provider(settings),
        tools=tools,
        subagent_tools=subagent_tools(settings),
        sessions=SessionStore(private),
        private=private,
        mcp=mcp,
    )


def private_folder(settings: Settings, workspace: Path) -> Path:
    """The conversations' private folder: the state folder, which must lie outside the
    workspace (else `ConfigurationError`). Moves a workspace's old `sessions/` and
    `memory/chats/` there when the new ones do not exist yet, logging one line each."""
    state = state_dir(settings)
    if state.is_relative_to(workspace):
        raise ConfigurationError(
            f"HARNESS_STATE_DIR ({state}) is inside the workspace ({workspace}): the tools "
            "would see every conversation; choose a folder outside it"
        )
    for relative in (Path("sessions"), CHATS_DIR):
        old, new = workspace / relative, state / relative
        if not _plain_folder(workspace, relative) or new.exists() or not any(old.iterdir()):
            continue
        new.parent.mkdir(parents=True, exist_ok=True)
        try:
            old.rename(new)
        except FileNotFoundError:  # another process moved it first
            continue
        except OSError as exc:
            logger.warning("could not move %s to %s (%s): move it by hand", old, new, exc)
            continue
        logger.warning("moved %s to %s (outside the workspace, private to the fleet)", old, new)
    return state


def _plain_folder(workspace: Path, relative: Path) -> bool:
    """True when `workspace/relative` is a folder reached through no link: a link there would
    move into the private folder and take the transcripts wherever it points."""
    try:
        info = lstat(workspace, relative)
    except UnsafePathError as exc:
        logger.warning("%s not moved: %s", relative.as_posix(), exc)
        return False
    if info is not None and stat.S_ISLNK(info.st_mode):
        logger.warning("%s not moved: it is a symbolic link", relative.as_posix())
    return info is not None and stat.S_ISDIR(info.st_mode)


def mcp_toolbox(settings: Settings) -> McpToolbox:
    """The toolbox of the operator's MCP config file (MCP_CONFIG), following its changes.
    Raises `ConfigurationError` when MCP_CONFIG lies inside the workspace. Logs one warning
    when the workspace holds an `mcp.json`, which is never read: the agent can write it."""
    path = config_path(settings)
    ignored = ignored_workspace_file(settings)
    if ignored is not None:
        logger.warning("%s", adoption_advice(ignored, path))
    return McpToolbox.from_file(path)


def agent_deps() -> AgentDeps:
    """The process's dependencies, built on first use."""
    global _deps
    with _lock:
        if _deps is None:
            _deps = build_deps(get_settings())
            _close_with_the_worker()
        return _deps


def set_agent_deps(deps: AgentDeps | None) -> None:
    """Replace (or with None, forget) the process's dependencies. For tests and embedding."""
    global _deps
    with _lock:
        old, _deps = _deps, deps
    if old is not None and old is not deps:
        old.close()
    if deps is not None:
        _close_with_the_worker()


def close_agent_deps(**_: Any) -> None:
    """Close and forget the process's dependencies (MCP servers, model clients). Connected
    to Celery's `worker_shutdown` and registered to run at exit. Idempotent."""
    set_agent_deps(None)


@functools.cache
def _close_with_the_worker() -> None:
    """Connect `close_agent_deps` to Celery's `worker_shutdown`, once, when the process first
    holds dependencies: connected at import, it made every importer (`harness agents`, which
    only lists the tools) import Celery's signals."""
    from celery.signals import worker_shutdown

    worker_shutdown.connect(close_agent_deps, weak=False)


atexit.register(close_agent_deps)
