"""Where MCP servers are configured: the operator's file, never the workspace.

A server entry runs its `command` as the fleet's user, outside the sandbox, with `${VAR}`
filled from the fleet's environment, and `safe` exempts its tools from approval. So the file
naming servers is configuration, like `.env`, and everything under the workspace is data the
agent may have written. The file is `MCP_CONFIG` (default `mcp.json` in the folder the fleet
runs in, where `.env` is read); a path that resolves (symlinks and `..` followed) into the
workspace is refused. `workspace/mcp.json`, where servers were configured before, is never read
or started: its presence is reported, with how to adopt it after review.
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import ConfigurationError
from harness.mcp.config import CONFIG_FILE
from harness.settings import Settings


def config_path(settings: Settings) -> Path:
    """The absolute path of the operator's MCP config (it need not exist). Raises
    `ConfigurationError` naming MCP_CONFIG when it resolves inside the workspace."""
    workspace = settings.agent_workspace.expanduser().resolve()
    path = settings.mcp_config.expanduser().resolve()
    if path.is_relative_to(workspace):
        raise ConfigurationError(
            f"MCP_CONFIG ({settings.mcp_config}) resolves to {path}, inside the workspace "
            f"({workspace}), where the agent can write it: put the file outside the "
            "workspace, e.g. beside .env"
        )
    return path


def ignored_workspace_file(settings: Settings) -> Path | None:
    """`<workspace>/mcp.json` when it exists (a dangling link included): it is never read."""
    candidate = settings.agent_workspace.expanduser().resolve() / CONFIG_FILE
    return candidate if candidate.is_symlink() or candidate.exists() else None


def adoption_advice(ignored: Path, config: Path | None) -> str:
    """One line saying `ignored` (a workspace `mcp.json`) starts nothing, and how an operator
    adopts it after review (`adoption_steps`)."""
    return (
        f"{ignored} is ignored: the agent can write the workspace, so no server named there "
        f"is started. To use it, {adoption_steps(ignored, config)}"
    )


def adoption_steps(ignored: Path, config: Path | None) -> str:
    """How to adopt `ignored`: review every entry, then move it to `config` (the MCP_CONFIG
    file), or merge it into that file when it exists."""
    target = str(config) if config is not None else "the MCP_CONFIG file"
    how = (
        f"merge the servers you trust into {target}"
        if config is not None and config.exists()
        else f"`mv {ignored} {target}`"
    )
    return (
        "review every entry (a command runs as the fleet's user, outside the sandbox), "
        f"then {how} (or point MCP_CONFIG at a reviewed copy outside the workspace)"
    )
