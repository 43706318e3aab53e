"""Skills: Markdown files the agent reads on demand, listed in the system prompt.

A skill is a `*.md` file that opens with YAML front matter holding a `name` and a
`description`:

    ---
    name: durable-functions
    description: Write cron jobs and event handlers for workspace/functions/.
    ---
    # Body the agent reads with the `read` tool when it needs the skill.

Only the index (name, description, path) goes into the prompt; the body costs nothing until
the agent reads it. Skills come from `skills/shipped/` (the harness's, mirrored by
`ensure_workspace`) and `skills/` (the user's); a valid user skill replaces the shipped skill
with the same file name.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.agent.front_matter import split_front_matter
from harness.agent.workspace import SHIPPED_SKILLS_DIR
from harness.workspace_files import UnsafePathError, files_in, read_bytes
from harness.workspace_memo import Memo, folder_stamp, joined

logger = logging.getLogger(__name__)

USER_SKILLS_DIR = Path("skills")
_FOLDERS = (SHIPPED_SKILLS_DIR, USER_SKILLS_DIR)


@dataclass(frozen=True)
class Skill:
    """One skill. `path` is workspace-relative in POSIX form, e.g. `skills/shipped/memory.md`,
    so the agent can pass it straight to the `read` tool."""

    name: str
    description: str
    path: str


def load_skills(workspace: Path) -> list[Skill]:
    """Return the workspace's skills sorted by name (then path). Never raises for a bad file.

    Reads `skills/shipped/*.md`, then `skills/*.md`; a user skill overrides the shipped skill
    of the same file name. A file without front matter, with YAML that does not parse, or
    without a non-empty string `name` and `description` is skipped with a warning (and a
    broken user skill then does not hide the shipped one). Whitespace runs in the name and
    description are collapsed so that each skill stays on one index line. A skill file that
    is a link, or a skills folder that is one, is skipped with a warning, never followed.
    The folders are read and parsed again only when one of their files changed
    (`harness.workspace_memo`).
    """
    stamp = joined(*(folder_stamp(workspace, folder.as_posix()) for folder in _FOLDERS))
    return list(_loaded.get(workspace, stamp, lambda: _load(workspace)))


_loaded: Memo[tuple[Skill, ...]] = Memo(max_entries=16)


def _load(workspace: Path) -> tuple[Skill, ...]:
    by_file: dict[str, Skill] = {}
    for folder in _FOLDERS:
        try:
            names = [name for name in files_in(workspace, folder) if name.endswith(".md")]
        except UnsafePathError as exc:
            logger.warning("skills in %s skipped: %s", folder.as_posix(), exc)
            continue
        for name in names:
            skill = _parse(workspace, (folder / name).as_posix())
            if skill is not None:
                by_file[name] = skill
    return tuple(sorted(by_file.values(), key=lambda s: (s.name, s.path)))


def skills_index(skills: list[Skill]) -> str:
    """Return one line per skill, `- name: description (read skills/...)`, in the given order;
    the empty string for no skills."""
    return "\n".join(f"- {s.name}: {s.description} (read {s.path})" for s in skills)


def _parse(workspace: Path, relative: str) -> Skill | None:
    try:
        text = read_bytes(workspace, relative).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("skill %s skipped: cannot read it (%s)", relative, exc)
        return None
    split = split_front_matter(text)
    if split is None:
        logger.warning("skill %s skipped: it does not open with --- front matter ---", relative)
        return None
    try:
        meta = yaml.safe_load(split.front)
    except yaml.YAMLError as exc:
        logger.warning("skill %s skipped: its front matter is not valid YAML (%s)", relative, exc)
        return None
    if not isinstance(meta, dict):
        logger.warning("skill %s skipped: its front matter is not a mapping", relative)
        return None
    name, description = _one_line(meta.get("name")), _one_line(meta.get("description"))
    if not name or not description:
        logger.warning(
            "skill %s skipped: front matter needs non-empty 'name' and 'description'", relative
        )
        return None
    return Skill(name=name, description=description, path=relative)


def _one_line(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""
