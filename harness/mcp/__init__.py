"""MCP servers as tools: the operator's `mcp.json` (`MCP_CONFIG`, outside the workspace) names
servers, each server's tools are offered to the model as `server__tool`.

location.py    which file: MCP_CONFIG, refused inside the workspace; workspace/mcp.json ignored
config.py      mcp.json -> ServerConfig list, `${VAR}` from the environment
watch.py       noticing that the file changed while a worker runs
connection.py  one server over the official `mcp` SDK (the only module that touches it):
               lazy start, restart with backoff, list and call tools, errors translated
tool.py        an MCP tool as a harness `Tool` (risky, timeout, result size cap)
toolbox.py     every configured server, as a dynamic tool source for the registry
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy_names import lazy_names
from harness.mcp.config import CONFIG_FILE, ServerConfig, load_config
from harness.mcp.location import (
    adoption_advice,
    adoption_steps,
    config_path,
    ignored_workspace_file,
)

if TYPE_CHECKING:
    from harness.mcp.toolbox import McpToolbox

__all__ = [
    "CONFIG_FILE",
    "McpToolbox",
    "ServerConfig",
    "adoption_advice",
    "adoption_steps",
    "config_path",
    "ignored_workspace_file",
    "load_config",
]

# The toolbox (with the tools' and the servers' modules, ~50 ms) only where servers are used:
# reading the configuration (`harness doctor`, `harness agents`) does not import it.
__getattr__ = lazy_names(__name__, {"McpToolbox": "toolbox"})
