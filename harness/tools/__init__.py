"""The agent's tools: files in the workspace, a shell, the web; and the registry that runs them.

Typical use by the agent loop:

    registry = default_registry(allow_shell=True)
    registry.register(my_tool)                      # the agent adds its own tools
    outcome = registry.execute("read", '{"path": "README.md"}', ToolContext(workspace))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy_names import lazy_names
from harness.tools.base import (
    Tool,
    ToolContext,
    ToolOutcome,
    ToolParams,
    ToolRegistry,
    ToolSpec,
)
from harness.tools.catalog import ToolFactory, ToolSettings, tools_for
from harness.tools.errors import ToolError, WorkspaceEscapeError
from harness.tools.sandbox import ShellPolicy, describe_sandbox, sandbox_mode

if TYPE_CHECKING:
    from harness.tools.bash import BashTool
    from harness.tools.edit import EditTool
    from harness.tools.find import FindTool
    from harness.tools.grep import GrepTool
    from harness.tools.ls import LsTool
    from harness.tools.paths import resolve_in_workspace
    from harness.tools.read import ReadTool
    from harness.tools.web_fetch import WebFetchTool
    from harness.tools.write import WriteTool

# The tools themselves load on first use: the sidecar and the CLI read the sandbox's rules
# from here without importing every tool (web_fetch's HTTP client among them).
__getattr__ = lazy_names(
    __name__,
    {
        "BashTool": "bash",
        "EditTool": "edit",
        "FindTool": "find",
        "GrepTool": "grep",
        "LsTool": "ls",
        "resolve_in_workspace": "paths",
        "ReadTool": "read",
        "WebFetchTool": "web_fetch",
        "WriteTool": "write",
    },
)

__all__ = [
    "TOOL_GUIDELINES",
    "BashTool",
    "EditTool",
    "FindTool",
    "GrepTool",
    "LsTool",
    "ReadTool",
    "ShellPolicy",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolFactory",
    "ToolOutcome",
    "ToolParams",
    "ToolRegistry",
    "ToolSettings",
    "ToolSpec",
    "WebFetchTool",
    "WorkspaceEscapeError",
    "WriteTool",
    "default_registry",
    "describe_sandbox",
    "resolve_in_workspace",
    "sandbox_mode",
]

TOOL_GUIDELINES = """\
Using tools:
- Paths are relative to your workspace; you cannot reach files outside it.
- Read a file before you edit it, and copy old_text exactly from what read showed.
- Prefer edit to write for changing an existing file; use write for new files or full rewrites.
- Prefer find and grep to bash for finding files and text; use ls to look inside one folder.
- To recall what you were told or noted before, or what the user's documents say, use search.
- Long output is cut: follow the hints (e.g. read's offset) instead of asking for everything.
- When a tool returns an error, read it and fix the call; do not repeat the same call.
- Be concise: ask for what you need, and do not repeat tool output back in full.
"""


def default_registry(
    allow_shell: bool,
    allow_private_fetch: bool = False,
    shell_policy: ShellPolicy | None = None,
) -> ToolRegistry:
    """Return a new registry with the tools of every `harness.tools` plug-in
    (`harness.tools.catalog`): the built-in read, write, edit, ls, find, grep, web_fetch, and
    bash, then those of installed packages.

    bash is included only when `allow_shell` is True; even then each call runs only if its
    `ToolContext.allow_shell` is set too, and it is confined by `shell_policy` (default: the
    sandbox in `auto` mode, host network). web_fetch refuses private and local addresses
    unless `allow_private_fetch`. More tools can be added with `register`.
    """
    settings = ToolSettings(allow_shell, allow_private_fetch, shell_policy)
    return ToolRegistry(tools_for(settings))
