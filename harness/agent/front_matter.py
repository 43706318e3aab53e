"""YAML front matter of the workspace's Markdown files (skills, agents, networks): one reader.

---
name: value
---
body
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.workspace_files import UnsafePathError, read_bytes

_FENCE = "---"


@dataclass(frozen=True)
class FrontMatter:
    """A file split at its front matter. `front` is the YAML between the fences (its first line
    is line 2 of the file); `body` what follows the closing fence, stripped."""

    front: str
    body: str


def split_front_matter(text: str) -> FrontMatter | None:
    """`text` split at its front matter, or None when it does not open with `---` and close it
    with another `---` line. A leading byte-order mark is ignored."""
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != _FENCE:
        return None
    for index in range(1, len(lines)):
        if lines[index].rstrip() == _FENCE:
            return FrontMatter("\n".join(lines[1:index]), "\n".join(lines[index + 1 :]).strip())
    return None


MAX_FILE_BYTES = 256 * 1024
"""The largest agent or network file read: a larger one is a load error, not a prompt."""


@dataclass(frozen=True)
class WorkspaceFileError:
    """Why the workspace file at `path` (workspace-relative) declares nothing usable: a load
    error of an agent or a network file; `line` is 1-based."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class FileProblem:
    """Why a workspace file has no usable front matter; `line` is the file's (1-based)."""

    line: int
    message: str


@dataclass(frozen=True)
class ParsedFile:
    """A file's front matter as a mapping (`meta`, keys as strings), as text (`front`) and as
    YAML's node tree (`tree`, for the line of a key; both start on the file's line 2), and
    its body."""

    meta: dict[str, Any]
    front: str
    tree: yaml.Node | None
    body: str


def read_front_matter(
    workspace: Path, path: str, max_bytes: int = MAX_FILE_BYTES
) -> ParsedFile | FileProblem:
    """The front matter and body of the workspace file at `path`, read without following a
    link, or why there is none (unreadable, too large, not UTF-8, no front matter, bad YAML
    at its line, not a mapping). Never raises."""
    try:
        raw = read_bytes(workspace, path)
    except (OSError, UnsafePathError) as exc:
        return FileProblem(1, f"cannot read it: {exc}")
    if len(raw) > max_bytes:
        return FileProblem(1, f"larger than {max_bytes // 1024} KiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return FileProblem(1, "not UTF-8 text")
    split = split_front_matter(text)
    if split is None:
        return FileProblem(1, "does not open with --- front matter ---")
    try:
        meta = yaml.safe_load(split.front) or {}
        tree = yaml.compose(split.front)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or type(exc).__name__
        line = mark.line + 2 if mark is not None else 1
        return FileProblem(line, f"front matter is not valid YAML: {problem}")
    if not isinstance(meta, dict):
        return FileProblem(2, "front matter is not a mapping of keys to values")
    return ParsedFile({str(k): v for k, v in meta.items()}, split.front, tree, split.body)
