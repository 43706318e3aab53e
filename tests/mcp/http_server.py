"""A small MCP server for the tests, served over streamable HTTP by uvicorn in a thread.

Built with the official SDK's `MCPServer.streamable_http_app()`. Every request must carry
`Authorization: Bearer <token>` (answered 401 otherwise), as a hosted server would.

Tools: `echo` answers its text, `hang` never answers, `grow` adds the tool `extra` and
announces that the tool list changed (both ways the protocol knows: a `subscriptions/listen`
event and the handshake-era notification).
"""

from __future__ import annotations

import socket
import threading
import time
from contextlib import suppress
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

Scope = dict[str, Any]


class HttpMcpServer:
    """Start with `with HttpMcpServer(token) as server:`; `url` is its MCP endpoint,
    `requests` counts every HTTP request and `rejected` those refused for a missing or wrong
    token. `open_connections` counts the TCP connections open now: the server never closes an
    idle keep-alive connection itself (uvicorn's 5 s default is lifted), so one a client leaves
    open stays counted until the client closes it."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.requests = 0
        self.rejected = 0
        self.mcp = self._build()
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}/mcp"
        config = uvicorn.Config(
            self._guarded(self.mcp.streamable_http_app()),
            log_level="error",
            timeout_keep_alive=3600,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    @property
    def open_connections(self) -> int:
        """The TCP connections the server holds open now."""
        return len(self._server.server_state.connections)

    def __enter__(self) -> HttpMcpServer:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            assert time.monotonic() < deadline, "the MCP test server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *_: object) -> None:
        self._server.should_exit = True
        self._server.force_exit = True  # open SSE streams would otherwise hold it
        self._thread.join(10)
        self._socket.close()

    def _build(self) -> MCPServer:
        server = MCPServer("web")

        @server.tool()
        def echo(text: str) -> str:
            """Answer `text` back."""
            return f"web echo: {text}"

        @server.tool()
        async def hang() -> str:
            """Never answer."""
            await anyio.sleep_forever()
            return "unreachable"

        @server.tool()
        async def grow(ctx: Context) -> str:
            """Add the tool `extra` and announce the change."""
            server.add_tool(lambda: "extra done", name="extra", description="Added at runtime.")
            with suppress(Exception):
                await ctx.notify_tools_changed()  # 2026-07-28: to listen streams
            with suppress(Exception):
                await ctx.session.send_tool_list_changed()  # handshake-era notification
            # the listen stream is another HTTP response, not ordered with this one: let the
            # event arrive before the answer, as it would from a server that is not this busy
            await anyio.sleep(0.5)
            return "grown"

        return server

    def _guarded(self, app: Any) -> Any:
        expected = f"Bearer {self.token}".encode()

        async def guarded(scope: Scope, receive: Any, send: Any) -> None:
            self.requests += scope["type"] == "http"
            if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
                self.rejected += 1
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
            await app(scope, receive, send)

        return guarded
