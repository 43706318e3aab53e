"""MCP servers as tools: `workspace/mcp.json` names servers, each server's tools are offered
to the model as `server__tool`.

config.py      mcp.json -> ServerConfig list, `${VAR}` from the environment
connection.py  one server over the official `mcp` SDK (the only module that touches it):
               lazy start, restart with backoff, list and call tools, errors translated
tool.py        an MCP tool as a harness `Tool` (risky, timeout, result size cap)
toolbox.py     every configured server, as a dynamic tool source for the registry
"""

from __future__ import annotations

from harness.mcp.config import CONFIG_FILE, ServerConfig, load_config
from harness.mcp.toolbox import McpToolbox

__all__ = ["CONFIG_FILE", "McpToolbox", "ServerConfig", "load_config"]
