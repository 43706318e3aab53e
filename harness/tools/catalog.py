"""Which tools an agent gets: the `harness.tools` entry-point protocol and the plug-ins loaded
through it.

A tool plug-in is a `ToolFactory` named by an entry point in the `harness.tools` group: given
the `ToolSettings` of the registry being built, it returns the tools it adds there (possibly
none: a plug-in may add nothing to sub-agents, or nothing without the shell). Each tool
implements `harness.tools.base.Tool`; a tool needing settings of its own reads them from the
environment in its factory. The built-in tools are the `builtin` entry point of this project's
pyproject.toml (`harness.tools.builtin`):

    [project.entry-points."harness.tools"]
    weather = "harness_weather:tools"

    def tools(settings: ToolSettings) -> list[Tool[Any]]:
        return [WeatherTool()]

The plug-ins are imported the first time a registry is built in the process (`tools_for`),
never when a module is imported.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import Any, TypeAlias, cast

from harness import plugins
from harness.tools.base import Tool
from harness.tools.sandbox import ShellPolicy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolSettings:
    """What the fleet decides for one registry of tools (the agent's or a sub-agent's):
    whether bash is offered and how it is confined (`shell_policy`, None: the sandbox in
    `auto` mode, host network), and whether web_fetch may reach private addresses."""

    allow_shell: bool
    allow_private_fetch: bool = False
    shell_policy: ShellPolicy | None = None


ToolFactory: TypeAlias = Callable[[ToolSettings], Iterable[Tool[Any]]]
"""The tools a plug-in adds to a registry built with these settings. May raise: the plug-in's
tools are then left out of that registry, with one log line."""

BUILTIN = "builtin"
"""The entry point of the built-in tools (`harness.tools.builtin`), this project's own."""
BUILTIN_NAMES = ("read", "write", "edit", "ls", "find", "grep", "web_fetch")
"""The built-in tools' names in the order they are offered, bash after them where the shell is
allowed: what `tool_names_for` lists without importing them (a test holds it to the tools)."""

_lock = threading.Lock()
_factories: dict[str, ToolFactory] | None = None


def load_tool_plugins(found: Iterable[EntryPoint] | None = None) -> list[str]:
    """Load the tool plug-ins (`found`, default every `harness.tools` entry point installed)
    in place of those loaded before, and return their names in the order their tools are
    offered. One that fails to import or is not callable is left out with one log line naming
    it. Never raises for a plug-in's fault."""
    global _factories
    found_plugins = plugins.load(plugins.TOOLS, found, callable, "a tool factory")
    loaded = {plugin.name: cast(ToolFactory, plugin.value) for plugin in found_plugins}
    with _lock:
        _factories = loaded
    return list(loaded)


def tools_for(settings: ToolSettings) -> list[Tool[Any]]:
    """The tools of every plug-in (loaded now if no registry was built before) under
    `settings`, the built-in ones first. A factory that raises, or a tool whose name an
    earlier one took, is left out with one log line. Never raises for a plug-in's fault."""
    with _lock:
        factories = _factories
    if factories is None:
        load_tool_plugins()
        with _lock:
            factories = _factories or {}
    tools: dict[str, Tool[Any]] = {}
    for name, factory in factories.items():
        try:
            made = list(factory(settings))
        except Exception as exc:  # a broken plug-in must not take the agent's tools with it
            log.error("%s plug-in %r failed: %s: %s", plugins.TOOLS, name, type(exc).__name__, exc)
            continue
        for tool in made:
            if tool.name in tools:
                log.warning(
                    "%s plug-in %r: tool %r is already offered", plugins.TOOLS, name, tool.name
                )
                continue
            tools[tool.name] = tool
    return list(tools.values())


def tool_names_for(settings: ToolSettings) -> list[str]:
    """The names of the tools `tools_for(settings)` offers, in the same order, without
    importing the built-in ones (`harness agents` lists them, ~40 ms to import): their names
    are `BUILTIN_NAMES`; every other plug-in is loaded and its tools built, as `tools_for`
    does. Never raises for a plug-in's fault."""
    names = [*BUILTIN_NAMES, *(("bash",) if settings.allow_shell else ())]
    others = [ep for ep in plugins.declared(plugins.TOOLS) if ep.name != BUILTIN]
    for plugin in plugins.load(plugins.TOOLS, others, callable, "a tool factory"):
        try:
            made = list(cast(ToolFactory, plugin.value)(settings))
        except Exception as exc:  # left out, as `tools_for` leaves it out
            log.error("%s plug-in %r failed: %s: %s", plugins.TOOLS, plugin.name, _kind(exc), exc)
            continue
        names += [tool.name for tool in made if tool.name not in names]
    return names


def _kind(exc: Exception) -> str:
    return type(exc).__name__
