"""Every configured MCP server, as a source of tools for the agent's `ToolRegistry`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ConfigurationError
from harness.mcp.config import ServerConfig, load_config
from harness.mcp.connection import ServerConnection
from harness.mcp.tool import McpTool
from harness.tools.base import Tool

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerStatus:
    """What `harness mcp list` and `harness doctor` show for one server."""

    name: str
    transport: str
    state: str
    reason: str
    tools: tuple[str, ...]


class McpToolbox:
    """The servers of one workspace. Servers start on the first `tools()` call, not before.
    Thread-safe; `tools()` never raises."""

    def __init__(self, configs: list[ServerConfig]) -> None:
        self._connections = [ServerConnection(c) for c in configs if not c.disabled]
        self._cache: dict[tuple[str, str], McpTool] = {}

    @classmethod
    def from_workspace(
        cls, workspace: Path, environ: Mapping[str, str] | None = None
    ) -> McpToolbox:
        """The toolbox for `workspace/mcp.json`; empty (with a logged error) when the file is
        unreadable, so a broken file never stops the agent."""
        try:
            return cls(load_config(workspace, environ))
        except ConfigurationError as exc:
            logger.error("MCP servers disabled: %s", exc)
            return cls([])

    def tools(self) -> list[Tool[Any]]:
        """The tools of every server that can run, starting servers as needed."""
        tools: list[Tool[Any]] = []
        for connection in self._connections:
            if connection.config.problem:
                continue
            for remote in connection.tools():
                key = (connection.config.name, remote.name)
                cached = self._cache.get(key)
                if cached is None or cached.schema != remote.input_schema:
                    cached = self._cache[key] = McpTool(connection, remote)
                tools.append(cached)
        return tools

    def status(self) -> list[ServerStatus]:
        """Each server's state and tools, starting the servers to find out."""
        listed = self.tools()
        return [
            ServerStatus(
                name=c.config.name,
                transport=c.config.transport,
                state=c.state,
                reason=c.reason,
                tools=tuple(t.name for t in listed if isinstance(t, McpTool) and t.connection is c),
            )
            for c in self._connections
        ]

    def close(self) -> None:
        """Stop every server, all at once (a stubborn stdio server takes seconds to be
        terminated), and wait for them. Idempotent."""
        closing = [
            threading.Thread(target=c.close, name=f"mcp-close-{c.config.name}")
            for c in self._connections
        ]
        for thread in closing:
            thread.start()
        for thread in closing:
            thread.join()
