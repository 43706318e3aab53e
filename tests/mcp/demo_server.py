"""A small MCP server for the tests, run as `python demo_server.py` (stdio).

Tools: `echo` answers its text, `crash` kills the server mid-call, `hang` never answers,
`big` answers 50,000 characters, `fail` reports a tool error, `forecast` answers structured
content (and its text), `grow` adds the tool `extra`
and announces that the tool list changed. With `DEMO_PIDFILE` set, the
server writes its process id there when it starts; with `DEMO_LINGER` set, it does not exit
when its stdin closes (a stubborn server: only terminating it ends it).
"""

from __future__ import annotations

import os
import time
from contextlib import suppress

from mcp.server.mcpserver import Context, MCPServer

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
async def grow(ctx: Context) -> str:
    """Add the tool `extra` and announce the change."""
    server.add_tool(lambda: "extra done", name="extra", description="Added at runtime.")
    with suppress(Exception):
        await ctx.notify_tools_changed()  # 2026-07-28: to listen streams
    with suppress(Exception):
        await ctx.session.send_tool_list_changed()  # handshake-era notification
    return "grown"


@server.tool(structured_output=True)
def forecast(city: str) -> dict[str, object]:
    """Answer a forecast as structured content."""
    return {"city": city, "temp_c": 21}


@server.tool()
def fail() -> str:
    """Report an error."""
    raise ValueError("the demo tool failed on purpose")


if __name__ == "__main__":
    if os.environ.get("DEMO_PIDFILE"):
        with open(os.environ["DEMO_PIDFILE"], "w") as pidfile:
            pidfile.write(str(os.getpid()))
    server.run("stdio")
    if os.environ.get("DEMO_LINGER"):
        time.sleep(120)
