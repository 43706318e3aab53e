"""Finding plug-ins: what installed packages add to the fleet through entry points.

A package adds a chat channel, tools or lifecycle hooks by declaring an entry point in one
of these groups, the way pytest and Simon Willison's `llm` find theirs; this project's own
channels and tools are declared the same way, in pyproject.toml's `[project.entry-points]`:

    [project.entry-points."harness.channels"]
    http-callback = "harness_http_callback:plugin"     # a `channels.plugin.ChannelPlugin`

    [project.entry-points."harness.tools"]
    weather = "harness_weather:tools"                  # a `harness.tools.catalog.ToolFactory`

    [project.entry-points."harness.hooks"]
    audit = "harness_audit:AuditHooks"                 # see `harness.agent.user_hooks`

What each group's objects must be is written where they are used (`channels.plugin`,
`harness.tools.catalog`, `harness.agent.user_hooks`); this module only finds and imports
them. Nothing is loaded when a module is imported: the process that assembles the fleet asks
for its plug-ins by group.
"""

from __future__ import annotations

import logging
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, distribution, entry_points
from importlib.metadata import PackageNotFoundError as _NotInstalled
from pathlib import Path

import harness
from harness.version import OWN_DISTRIBUTIONS

log = logging.getLogger(__name__)

CHANNELS = "harness.channels"
"""The entry-point group of chat channels (see `channels.plugin.ChannelPlugin`)."""
TOOLS = "harness.tools"
"""The entry-point group of agent tools (see `harness.tools.catalog.ToolFactory`)."""
HOOKS = "harness.hooks"
"""The entry-point group of lifecycle hooks (see `harness.agent.user_hooks`)."""


@dataclass(frozen=True)
class Plugin:
    """One loaded entry point: its `name`, the object it names, and where it came from
    (`name = module:attribute`, for log lines)."""

    name: str
    value: object
    origin: str


def declared(group: str) -> list[EntryPoint]:
    """The entry points of `group`: this project's own first, by name (installers write
    entry-point metadata sorted, so declared order is not kept), then every other installed
    package's, by package and name. Imports nothing."""
    others = [ep for ep in entry_points(group=group) if not _is_own(ep)]
    others.sort(key=lambda ep: (_dist_name(ep), ep.name))
    return [*_own(group), *others]


def load(
    group: str,
    found: Iterable[EntryPoint] | None,
    accepts: Callable[[object], bool],
    expected: str,
) -> list[Plugin]:
    """Import each entry point of `group` (`found`, default `declared(group)`). One that
    fails to import, or names an object `accepts` refuses (it should name `expected`), is left
    out with one error line naming it; a later one with the same name as an earlier one is
    left out with a warning. Never raises for a plug-in's fault."""
    loaded: dict[str, Plugin] = {}
    for ep in declared(group) if found is None else found:
        origin = f"{ep.name} = {ep.value}"
        if ep.name in loaded:
            log.warning("%s plug-in %r ignored: %s has the same name", group, origin, ep.name)
            continue
        try:
            value = ep.load()
        except Exception as exc:  # a broken plug-in must not stop the fleet
            log.error("%s plug-in %r failed to load: %s: %s", group, origin, _kind(exc), exc)
            continue
        if not accepts(value):
            kind = type(value).__name__
            log.error("%s plug-in %r ignored: it names a %s, not %s", group, origin, kind, expected)
            continue
        loaded[ep.name] = Plugin(ep.name, value, origin)
    return list(loaded.values())


def _own(group: str) -> list[EntryPoint]:
    """This project's entry points of `group`, from its installed metadata; when that does not
    know the group (an editable install made before the group was added, or a checkout run
    without installing), from the checkout's pyproject.toml, which is what `pip install -e .`
    would write."""
    for name in OWN_DISTRIBUTIONS:
        try:
            metadata = distribution(name).entry_points
        except _NotInstalled:
            continue
        if group in metadata.groups:
            return sorted(metadata.select(group=group), key=lambda ep: ep.name)
    pyproject = Path(harness.__file__).resolve().parent.parent / "pyproject.toml"
    if not pyproject.is_file():
        return []
    with pyproject.open("rb") as file:
        table = tomllib.load(file).get("project", {}).get("entry-points", {}).get(group, {})
    return [EntryPoint(name, value, group) for name, value in sorted(table.items())]


def _is_own(ep: EntryPoint) -> bool:
    # Installers may write the name as `harness_agents`: compare normalised (PEP 503).
    name = re.sub(r"[-_.]+", "-", _dist_name(ep)).lower()
    return name in OWN_DISTRIBUTIONS


def _dist_name(ep: EntryPoint) -> str:
    dist = ep.dist
    return "" if dist is None else str(dist.name)


def _kind(exc: Exception) -> str:
    return type(exc).__name__
