"""Confining tool paths to the agent's workspace.

This is a guard against a model wandering off, not a sandbox: a process that swaps a checked
path for a symlink between the check and the use is not defended against. (The bash tool's
sandbox cannot make a link to a file outside the workspace: it sees no such file.)
"""

from __future__ import annotations

import stat
from pathlib import Path

from harness.tools.errors import ToolError, WorkspaceEscapeError
from harness.tools.sandbox_rules import HIDDEN_FOLDERS


def resolve_in_workspace(workspace: Path, path: str | Path) -> Path:
    """Return `path` fully resolved, or raise `WorkspaceEscapeError` if it lies outside `workspace`.

    Relative paths are taken from the workspace; absolute paths are accepted when they resolve
    inside it. Symlinks are followed (`Path.resolve`), so a link inside the workspace that points
    out is refused. The path need not exist. An empty path means the workspace itself.
    Raises `ToolError` for a path the OS cannot represent (e.g. one holding a NUL byte).
    """
    root = workspace.resolve()
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve()
    except (OSError, ValueError) as exc:
        raise ToolError(f"invalid path {str(path)!r}: {exc}") from exc
    if not resolved.is_relative_to(root):
        raise WorkspaceEscapeError(
            f"path {str(path)!r} resolves to {resolved}, which is outside the workspace {root}; "
            "only paths inside the workspace can be used"
        )
    hidden = hidden_folder(root, resolved)
    if hidden is not None:
        raise WorkspaceEscapeError(
            f"path {str(path)!r} is inside {hidden}/, which is private (conversations, "
            "runtime state) and cannot be used by tools"
        )
    try:
        info = resolved.stat()
    except (FileNotFoundError, NotADirectoryError):
        return resolved
    except OSError as exc:
        raise ToolError(f"cannot use {str(path)!r}: {exc.strerror or exc}") from exc
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        raise WorkspaceEscapeError(
            f"{str(path)!r} has {info.st_nlink} hard links; files linked from outside the "
            "workspace can't be read, so no file with several hard links can be used"
        )
    return resolved


def is_hidden(workspace: Path, path: Path) -> bool:
    """True if the resolved `path` is or lies under one of the resolved `workspace`'s hidden
    folders (`sessions/`, `.harness/`, `memory/chats/`), which no tool may see."""
    return hidden_folder(workspace, path) is not None


def hidden_folder(workspace: Path, path: Path) -> str | None:
    """The hidden folder (as listed in `HIDDEN_FOLDERS`) that the resolved `path` is or lies
    under, or None."""
    relative = path.relative_to(workspace).parts if path.is_relative_to(workspace) else ()
    for folder in HIDDEN_FOLDERS:
        parts = tuple(folder.split("/"))
        if relative[: len(parts)] == parts:
            return folder
    return None


def display_path(workspace: Path, path: Path) -> str:
    """Return `path` relative to the workspace in POSIX form (`.` for the workspace itself).

    `path` must already be resolved inside the workspace (see `resolve_in_workspace`).
    """
    relative = path.relative_to(workspace.resolve())
    return relative.as_posix() if relative.parts else "."
