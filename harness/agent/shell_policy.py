"""The bash tool's confinement as the operator set it (`AGENT_SHELL_*`): its own module so
that `harness doctor` reads it without importing the agent's dependencies (`deps`: the
model factory, MCP, the search index)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.tools.sandbox import ShellPolicy

if TYPE_CHECKING:
    from harness.settings import Settings


def shell_policy(settings: Settings) -> ShellPolicy:
    """The bash tool's sandbox policy from the `AGENT_SHELL_*` settings."""
    names = tuple(n.strip() for n in settings.agent_shell_env.split(",") if n.strip())
    return ShellPolicy(
        sandbox=settings.agent_shell_sandbox,
        network=settings.agent_shell_network,
        env_names=names,
        max_file_mb=settings.agent_shell_max_file_mb,
        max_memory_mb=settings.agent_shell_max_memory_mb,
        max_cpu_seconds=settings.agent_shell_max_cpu_seconds,
        max_processes=settings.agent_shell_max_processes,
    )
