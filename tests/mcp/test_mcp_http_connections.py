"""An HTTP MCP server's connections end with ours: the `httpx2` client the connection hands
the SDK is ours to close (the SDK closes only a client it made), and an idle keep-alive
connection left in its pool stayed open until the garbage collector found it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.mcp.config import ServerConfig
from harness.mcp.connection import ServerConnection
from tests.mcp.http_server import HttpMcpServer
from tests.waiting import wait_until

TOKEN = "mcp-connections-token"


@pytest.fixture
def web() -> Iterator[HttpMcpServer]:
    with HttpMcpServer(TOKEN) as server:
        yield server


def test_closing_an_http_connection_closes_its_tcp_connections(web: HttpMcpServer) -> None:
    # Given a connection to an HTTP server that has listed its tools and answered a call
    config = ServerConfig(
        name="web", url=web.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30.0
    )
    connection = ServerConnection(config)
    assert "echo" in [t.name for t in connection.tools()]
    assert connection.call("echo", {"text": "hi"}, timeout=30.0).text == "web echo: hi"
    assert web.open_connections > 0, "the call should have left a keep-alive connection"

    # When the connection is closed while the server is still up
    connection.close()

    # Then the server sees every TCP connection closed (it closes none of them itself)
    wait_until(lambda: web.open_connections == 0, "the client to close its TCP connections")
