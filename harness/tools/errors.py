"""Errors the tools raise on purpose. They subclass the project's `HarnessError`.

    HarnessError
    └── ToolError                 a tool failed in a way the model should read and act on
        └── WorkspaceEscapeError  a path resolves outside the agent's workspace

`ToolRegistry.execute` turns a `ToolError` into an error outcome carrying its message verbatim,
so messages are written for the model: say what was wrong and what to do instead.
"""

from __future__ import annotations

from harness.errors import HarnessError


class ToolError(HarnessError):
    """A tool could not do what was asked. The message is shown to the model as is."""


class WorkspaceEscapeError(ToolError, ValueError):
    """A path resolves outside the workspace (via `..`, an absolute path or a symlink)."""
