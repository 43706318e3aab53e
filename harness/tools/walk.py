"""Walking a workspace tree and matching paths against glob patterns (for find and grep)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.tools.paths import is_hidden

SKIPPED_DIRS = frozenset({".git"})
_BRACES = re.compile(r"\{([^{}]*)\}")
_MAX_ALTERNATIVES = 64


@dataclass(frozen=True)
class Entry:
    """One file or folder met by `walk`; `relative` is POSIX and relative to the walk root."""

    path: Path
    relative: str
    is_dir: bool


def walk(root: Path, workspace: Path) -> Iterator[Entry]:
    """Yield the entries under `root` (not `root` itself) in sorted, depth-first order.

    `.git` folders and the workspace's hidden folders (`sessions/`, `.harness/`) are skipped,
    symlinked folders are listed but not entered, and symlinks that resolve outside
    `workspace`, into a hidden folder (or nowhere) are left out, so nothing read through an
    entry escapes the workspace. Unreadable folders are skipped silently. (Files with several
    hard links are listed; the tools that open them refuse them.)
    """
    boundary = workspace.resolve()
    for folder, dirnames, filenames in os.walk(root):
        base = Path(folder)
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIPPED_DIRS and _visible(base / d, boundary)
        )
        names = [(d, True) for d in dirnames] + [(f, False) for f in filenames]
        for name, is_dir in sorted(names):
            path = base / name
            if is_dir or _visible(path, boundary):
                yield Entry(path, path.relative_to(root).as_posix(), is_dir)


def _visible(path: Path, boundary: Path) -> bool:
    if not path.is_symlink():
        return not is_hidden(boundary, path)
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return False
    return target.is_relative_to(boundary) and not is_hidden(boundary, target)


def compile_glob(pattern: str) -> Callable[[str], bool]:
    """Return a predicate on POSIX relative paths for a glob `pattern`.

    A pattern without `/` matches the file name at any depth (`*.py`); one with `/` matches the
    whole relative path (`src/**/*.py`). `**` spans any number of folders, `*` and `?` stay
    within one name, `[abc]`/`[!abc]` are character classes, `{a,b}` are alternatives.
    """
    pattern = pattern.strip().removeprefix("./").lstrip("/")
    alternatives = _expand_braces(pattern)
    by_name = all("/" not in p for p in alternatives)
    regex = re.compile("|".join(f"(?:{_translate(p)})" for p in alternatives) + r"\Z", re.DOTALL)
    if by_name:
        return lambda relative: regex.match(relative.rsplit("/", 1)[-1]) is not None
    return lambda relative: regex.match(relative) is not None


def _expand_braces(pattern: str) -> list[str]:
    done: list[str] = []
    pending = [pattern]
    while pending and len(done) + len(pending) <= _MAX_ALTERNATIVES:
        current = pending.pop()
        found = _BRACES.search(current)
        if found is None:
            done.append(current)
            continue
        head, tail = current[: found.start()], current[found.end() :]
        pending.extend(head + option + tail for option in found.group(1).split(","))
    return done + pending


def _translate(pattern: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
            continue
        char = pattern[index]
        index += 1
        if char == "*":
            if pattern.startswith("*", index):
                out.append(".*")
                index += 1
            else:
                out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (close := pattern.find("]", index + 1)) != -1:
            body = pattern[index:close]
            negate = body.startswith("!")
            body = body.removeprefix("!").replace("\\", "\\\\")
            out.append(f"[{'^/' if negate else ''}{body}]")
            index = close + 1
        else:
            out.append(re.escape(char))
    return "".join(out)
