"""Reading the networks the workspace declares: `workspace/networks/<name>.md`, and the
`@network`s of its `functions/` that the sidecar registered (`workspace_networks`).

Never raises for a bad file: a network that does not parse, or names an agent the workspace
does not declare (`workspace/agents/<name>/AGENT.md`), is left out and reported as a
`NetworkLoadError` naming the file and the line at fault. A declared network is checked with
the same rules (`declared.check_declared`); a name declared twice (a file and a `@network`)
loads neither, and the error names both places. Files are read without following links
(`harness.workspace_files`), and parsed again only when they changed (`harness.workspace_memo`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml
from pydantic import ValidationError

from harness.agent.front_matter import FileProblem, WorkspaceFileError, read_front_matter
from harness.agent.networks.declare import NETWORK_KIND
from harness.agent.networks.declared import check_declared, place
from harness.agent.networks.spec import Loc, NetworkSpec, unknown_references
from harness.agent.roster import Roster, load_roster
from harness.runtime import Runtime
from harness.runtime.function_sources import FILE_SOURCE, Declaration, declarations
from harness.workspace_files import UnsafePathError, entries
from harness.workspace_memo import Memo, files_stamp

NETWORKS_DIR = PurePosixPath("networks")
SUFFIX = ".md"
SET_BY_THE_LOADER = ("name", "instructions", "path")


NetworkLoadError = WorkspaceFileError
"""Why an network file declares no network (`path`, `line`, `message`)."""


@dataclass(frozen=True)
class Networks:
    """The networks of a workspace, by name, and the files that declared none."""

    networks: dict[str, NetworkSpec] = field(default_factory=dict)
    errors: tuple[NetworkLoadError, ...] = ()

    def get(self, name: str) -> NetworkSpec | None:
        """The network called `name`, or None."""
        return self.networks.get(name)

    def names(self) -> list[str]:
        """Every network's name, sorted."""
        return sorted(self.networks)


def workspace_networks(workspace: Path, runtime: Runtime, roster: Roster | None = None) -> Networks:
    """`load_networks` with the `@network`s the sidecar registered from `functions/`. Raises
    `BusUnavailableError` when Redis cannot be read."""
    return load_networks(workspace, roster, declarations(runtime, FILE_SOURCE, NETWORK_KIND))


def load_networks(
    workspace: Path, roster: Roster | None = None, declared: Sequence[Declaration] = ()
) -> Networks:
    """Every `networks/<name>.md` of `workspace`, and every network of `declared`, that
    parses and names only agents of `roster` (default: the workspace's), and an error for
    each that does not. Never raises."""
    roster = roster if roster is not None else load_roster(workspace)
    networks: dict[str, NetworkSpec] = {}
    errors: list[NetworkLoadError] = []
    try:
        listed = entries(workspace, NETWORKS_DIR)
    except UnsafePathError as exc:
        errors.append(NetworkLoadError(NETWORKS_DIR.as_posix(), 1, str(exc)))
        listed = []
    for filename, kind in listed:
        if not filename.endswith(SUFFIX):
            continue
        path = (NETWORKS_DIR / filename).as_posix()
        if kind != "file":
            errors.append(NetworkLoadError(path, 1, f"not a regular file ({kind}): not read"))
            continue
        parsed = _parsed_network(workspace, filename.removesuffix(SUFFIX), path, roster)
        if isinstance(parsed, NetworkSpec):
            networks[parsed.name] = parsed
        else:
            errors.append(parsed)
    _add_declared(declared, roster, networks, errors)
    return Networks(networks=networks, errors=tuple(errors))


def _add_declared(
    declared: Sequence[Declaration],
    roster: Roster,
    networks: dict[str, NetworkSpec],
    errors: list[NetworkLoadError],
) -> None:
    """Add each declared network that checks out to `networks`, an error to `errors` for
    each other; a name a file already has loads neither, each place named in the other's
    error (the sidecar refuses a name two `@network`s declare)."""
    for declaration in declared:
        parsed = parse_declared(declaration, roster)
        if not isinstance(parsed, NetworkSpec):
            errors.append(parsed)
            continue
        taken = networks.pop(parsed.name, None)
        if taken is None:
            networks[parsed.name] = parsed
            continue
        here, line = parsed.path, declaration.line
        twice = f"network {parsed.name!r} is declared twice, neither loads"
        errors.append(NetworkLoadError(here, line, f"{twice}: also {taken.path}"))
        errors.append(NetworkLoadError(taken.path, 1, f"{twice}: also {here}:{line}"))


def parse_declared(declaration: Declaration, roster: Roster) -> NetworkSpec | NetworkLoadError:
    """The network a `@network` declares (checked like a file, its agents in `roster`), or
    why it declares none, at its file and line in `functions/`."""
    path, line = place(declaration), declaration.line
    checked = check_declared(declaration)
    if isinstance(checked, str):
        return NetworkLoadError(path, line, checked)
    for agent in checked.agents:
        if roster.get(agent) is None:
            return NetworkLoadError(path, line, f"agents: no agent named {agent!r}")
    for loc, message in unknown_references(checked):
        return NetworkLoadError(path, line, f"{'.'.join(map(str, loc))}: {message}")
    return checked


_parsed: Memo[NetworkSpec | NetworkLoadError] = Memo(max_entries=256)


def _parsed_network(
    workspace: Path, name: str, path: str, roster: Roster
) -> NetworkSpec | NetworkLoadError:
    """`parse_network`, again only when the file changed or the roster's names did (the
    check that its agents exist reads only those)."""
    key = (workspace, path, tuple(roster.names()))
    stamp = files_stamp(workspace, [path])
    return _parsed.get(key, stamp, lambda: parse_network(workspace, name, path, roster))


def parse_network(
    workspace: Path, name: str, path: str, roster: Roster
) -> NetworkSpec | NetworkLoadError:
    """The network `name` declared by the file at `path`, or why it declares none."""
    parsed = read_front_matter(workspace, path)
    if isinstance(parsed, FileProblem):
        return NetworkLoadError(path, parsed.line, parsed.message)
    meta = parsed.meta
    at = _Lines(parsed.tree)
    for key in map(str, meta):
        if key in SET_BY_THE_LOADER:
            return NetworkLoadError(path, at.line((key,)), f"{key!r} is not set here")
        if key not in NetworkSpec.model_fields:
            known = ", ".join(k for k in NetworkSpec.model_fields if k not in SET_BY_THE_LOADER)
            return NetworkLoadError(path, at.line((key,)), f"unknown key {key!r} ({known})")
    try:
        spec = NetworkSpec(name=name, instructions=parsed.body, path=path, **meta)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return NetworkLoadError(path, at.line(tuple(first["loc"])), f"{where}: {first['msg']}")
    for index, agent in enumerate(spec.agents):
        if roster.get(agent) is None:
            message = f"agents: no agent named {agent!r} (agents/{agent}/AGENT.md)"
            return NetworkLoadError(path, at.line(("agents", index)), message)
    for loc, message in unknown_references(spec):
        return NetworkLoadError(path, at.line(loc), f"{'.'.join(map(str, loc))}: {message}")
    return spec


class _Lines:
    """The file lines of front-matter values, from YAML's node tree (the front matter starts
    on line 2 of the file)."""

    def __init__(self, tree: yaml.Node | None) -> None:
        self.tree = tree

    def line(self, loc: Loc) -> int:
        """The line of the value at key path `loc`, as deep as the path is found (parts the
        file does not have, such as a router's kind tag, are skipped); 2 when none is."""
        node, line = self.tree, 0
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                found = next((pair for pair in node.value if pair[0].value == str(part)), None)
                if found is not None:
                    line, node = found[0].start_mark.line, found[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                if 0 <= part < len(node.value):
                    node = node.value[part]
                    line = node.start_mark.line
        return line + 2
