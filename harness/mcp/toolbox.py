"""Every configured MCP server, as a source of tools for the agent's `ToolRegistry`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ConfigurationError
from harness.mcp.config import ServerConfig
from harness.mcp.connection import ServerConnection
from harness.mcp.tool import McpTool
from harness.mcp.watch import ConfigWatch
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
    """The configured servers. Servers start on the first `tools()` call, not before. Built
    `from_file`, it follows the file: a changed server is restarted, a new one started, a
    removed one stopped, at the first listing after the change is noticed (`watch.py`).
    Thread-safe; `tools()` never raises."""

    def __init__(self, configs: list[ServerConfig], watch: ConfigWatch | None = None) -> None:
        self._lock = threading.Lock()
        self._connections = [ServerConnection(c) for c in configs if not c.disabled]
        self._cache: dict[tuple[str, str], McpTool] = {}
        self._watch = watch
        self._stopping: list[threading.Thread] = []

    @classmethod
    def from_file(
        cls,
        path: Path,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> McpToolbox:
        """The toolbox for the operator's config file `path` (the caller has checked that it
        lies outside the workspace), following its changes. Empty, with a logged error, while
        the file is unusable, so a broken file never stops the agent."""
        watch = ConfigWatch(path, environ, clock)
        try:
            configs = watch.load()
        except ConfigurationError as exc:
            logger.error("MCP servers disabled: %s", exc)
            configs = []
        return cls(configs, watch)

    def tools(self) -> list[Tool[Any]]:
        """The tools of every server that can run, starting servers as needed."""
        self._follow_changes()
        tools: list[Tool[Any]] = []
        for connection in self._current():
            if connection.config.problem:
                continue
            for remote in connection.tools():
                key = (connection.config.name, remote.name)
                cached = self._cache.get(key)
                if (
                    cached is None
                    or cached.connection is not connection
                    or cached.schema != remote.input_schema
                ):
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
            for c in self._current()
        ]

    def close(self) -> None:
        """Stop every server, all at once (a stubborn stdio server takes seconds to be
        terminated), and wait for them, and for servers a change stopped. Stops following
        the file. Idempotent."""
        with self._lock:
            self._watch = None
            connections, self._connections = self._connections, []
        self._stop(connections)
        for thread in self._stopping:
            thread.join()

    def _current(self) -> list[ServerConnection]:
        with self._lock:
            return list(self._connections)

    def _follow_changes(self) -> None:
        """Apply a change of the config file, if `ConfigWatch` saw one. An unusable new file
        is logged once and leaves the running servers as they are (an editor may be halfway
        through writing it)."""
        with self._lock:
            if self._watch is None:
                return
            try:
                configs = self._watch.poll()
            except ConfigurationError as exc:
                logger.error("%s; the MCP servers keep their previous configuration", exc)
                return
            if configs is None:
                return
            stopped = self._apply(configs)
        self._stop(stopped, wait=False)

    def _apply(self, configs: list[ServerConfig]) -> list[ServerConnection]:
        """Replace the connections by those of `configs`, keeping each whose configuration
        is unchanged; returns the connections to stop. Called with the lock held."""
        old = {c.config.name: c for c in self._connections}
        fresh: list[ServerConnection] = []
        started: list[str] = []
        for config in configs:
            if config.disabled:
                continue
            same = old.get(config.name)
            if same is not None and same.config == config:
                fresh.append(old.pop(config.name))
            else:
                fresh.append(ServerConnection(config))
                started.append(config.name)
        self._connections = fresh
        logger.info(
            "MCP config changed: servers new or changed: %s; stopped: %s",
            ", ".join(started) or "none",
            ", ".join(old) or "none",
        )
        return list(old.values())

    def _stop(self, connections: list[ServerConnection], wait: bool = True) -> None:
        threads = [
            threading.Thread(target=c.close, name=f"mcp-close-{c.config.name}") for c in connections
        ]
        for thread in threads:
            thread.start()
        if wait:
            for thread in threads:
                thread.join()
        else:  # a change: the listing goes on while they stop; `close()` waits for them
            self._stopping = [t for t in self._stopping if t.is_alive()] + threads
