"""The built-in tools, as the `builtin` plug-in of the `harness.tools` entry-point group
(declared in pyproject.toml, see `harness.tools.catalog`)."""

from __future__ import annotations

from typing import Any

from harness.tools.base import Tool
from harness.tools.bash import BashTool
from harness.tools.catalog import ToolSettings
from harness.tools.edit import EditTool
from harness.tools.find import FindTool
from harness.tools.grep import GrepTool
from harness.tools.ls import LsTool
from harness.tools.read import ReadTool
from harness.tools.web_fetch import WebFetchTool
from harness.tools.write import WriteTool


def builtin_tools(settings: ToolSettings) -> list[Tool[Any]]:
    """read, write, edit, ls, find, grep, web_fetch, and bash when `settings.allow_shell`, in
    that order (the order the model sees them)."""
    tools: list[Tool[Any]] = [
        ReadTool(),
        WriteTool(),
        EditTool(),
        LsTool(),
        FindTool(),
        GrepTool(),
        WebFetchTool(allow_private=settings.allow_private_fetch),
    ]
    if settings.allow_shell:
        tools.append(BashTool(settings.shell_policy))
    return tools
