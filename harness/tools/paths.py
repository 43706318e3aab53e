"""Confining tool paths to the agent's workspace.

This is a guard against a model wandering off, not a sandbox: a process that swaps a checked
path for a symlink between the check and the use is not defended against.
"""

from __future__ import annotations

from pathlib import Path

from harness.tools.errors import ToolError, WorkspaceEscapeError


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
    return resolved


def display_path(workspace: Path, path: Path) -> str:
    """Return `path` relative to the workspace in POSIX form (`.` for the workspace itself).

    `path` must already be resolved inside the workspace (see `resolve_in_workspace`).
    """
    relative = path.relative_to(workspace.resolve())
    return relative.as_posix() if relative.parts else "."
