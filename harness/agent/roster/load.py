"""Reading the agents the workspace declares: `workspace/agents/<name>/AGENT.md`.

Never raises for a bad file: an agent that does not parse is left out and reported as an
`AgentLoadError` naming the file and the line (`harness agents` prints them; the default
agent's prompt notes them, as it does a function's load errors). Files are read without
following links (`harness.workspace_files`), and parsed again only when they changed
(`harness.workspace_memo`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pydantic import ValidationError

from harness.agent.front_matter import FileProblem, WorkspaceFileError, read_front_matter
from harness.agent.roster.spec import AgentSpec
from harness.workspace_files import UnsafePathError, entries, lstat
from harness.workspace_memo import Memo, files_stamp

AGENTS_DIR = PurePosixPath("agents")
AGENT_FILE = "AGENT.md"


AgentLoadError = WorkspaceFileError
"""Why an agent file declares no agent (`path`, `line`, `message`)."""


@dataclass(frozen=True)
class Roster:
    """The named agents of a workspace, by name, and the files that declared none."""

    agents: dict[str, AgentSpec] = field(default_factory=dict)
    errors: tuple[AgentLoadError, ...] = ()

    def get(self, name: str) -> AgentSpec | None:
        """The agent called `name`, or None."""
        return self.agents.get(name)

    def names(self) -> list[str]:
        """Every agent's name, sorted."""
        return sorted(self.agents)


def load_roster(workspace: Path) -> Roster:
    """Every `agents/<name>/AGENT.md` of `workspace` that parses, and an error for each that
    does not (or is a link, or is not a file). Never raises."""
    agents: dict[str, AgentSpec] = {}
    errors: list[AgentLoadError] = []
    try:
        folders = entries(workspace, AGENTS_DIR)
    except UnsafePathError as exc:
        return Roster(errors=(AgentLoadError(AGENTS_DIR.as_posix(), 1, str(exc)),))
    for name, kind in folders:
        path = (AGENTS_DIR / name / AGENT_FILE).as_posix()
        if kind != "folder":
            if kind == "link":
                errors.append(AgentLoadError(path, 1, "agents/ entry is a link: not followed"))
            continue
        parsed = _parse_cached(workspace, name, path)
        if isinstance(parsed, AgentSpec):
            agents[parsed.name] = parsed
        elif parsed is not None:
            errors.append(parsed)
    return Roster(agents=agents, errors=tuple(errors))


_parsed: Memo[AgentSpec | AgentLoadError] = Memo(max_entries=256)


def _parse_cached(workspace: Path, name: str, path: str) -> AgentSpec | AgentLoadError | None:
    stamp = files_stamp(workspace, [path])
    if stamp is not None and not stamp.exists:
        return None  # a folder without AGENT.md: not an agent (yet)
    if stamp is None:  # a link on the way, or no plain file: read as ever, refused below
        try:
            if lstat(workspace, path) is None:
                return None
        except OSError as exc:
            return AgentLoadError(path, 1, f"cannot read it: {exc}")
    return _parsed.get((workspace, path), stamp, lambda: parse_agent(workspace, name, path))


def parse_agent(workspace: Path, name: str, path: str) -> AgentSpec | AgentLoadError:
    """The agent `name` declared by the file at `path`, or why it declares none."""
    parsed = read_front_matter(workspace, path)
    if isinstance(parsed, FileProblem):
        return AgentLoadError(path, parsed.line, parsed.message)
    meta, front = parsed.meta, parsed.front
    for reserved in ("name", "instructions", "path"):
        if reserved in meta:
            line = _line_of(front, reserved)
            return AgentLoadError(path, line, f"{reserved!r} is not set in front matter")
    try:
        return AgentSpec(name=name, instructions=parsed.body, path=path, **meta)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        key = str(first["loc"][0]) if first["loc"] else ""
        return AgentLoadError(path, _line_of(front, key), f"{where}: {first['msg']}")


def _line_of(front: str, key: str) -> int:
    """The file's line (1-based) where front-matter key `key` is set; 1 for the name (the
    folder), 2 when the key is not found."""
    if key == "name":
        return 1
    pattern = re.compile(rf"^{re.escape(key)}\s*:")
    for index, line in enumerate(front.splitlines()):
        if pattern.match(line):
            return index + 2
    return 2
