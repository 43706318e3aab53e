"""A small MCP server for the tests, run as `python demo_server.py` (stdio).

Tools: `echo` answers its text, `crash` kills the server mid-call, `hang` never answers,
`big` answers 50,000 characters, `fail` reports a tool error.
"""

from __future__ import annotations

import os
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("demo")


@server.tool()
def echo(text: str) -> str:
    """Answer `text` back."""
    return f"echo: {text}"


@server.tool()
def crash() -> str:
    """Exit the process without answering."""
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answer."""
    while True:
        time.sleep(60)


@server.tool()
def big() -> str:
    """Answer a very long text."""
    return "x" * 50_000


@server.tool()
def fail() -> str:
    """Report an error."""
    raise ValueError("the demo tool failed on purpose")


if __name__ == "__main__":
    server.run("stdio")
