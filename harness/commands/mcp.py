"""`harness mcp list`: the MCP servers of `workspace/mcp.json`, their state and their tools;
and the doctor's check of the same."""

from __future__ import annotations

import typer
from rich.console import Console

from harness.commands.check import Check
from harness.errors import ConfigurationError
from harness.mcp import CONFIG_FILE, McpToolbox, load_config
from harness.mcp.toolbox import ServerStatus
from harness.settings import Settings, get_settings

mcp_app = typer.Typer(help="MCP servers configured in workspace/mcp.json.", no_args_is_help=True)


def server_statuses(settings: Settings) -> list[ServerStatus]:
    """Start every configured server, list its tools, stop it. Raises `ConfigurationError`
    for an unreadable mcp.json."""
    box = McpToolbox(load_config(settings.agent_workspace.resolve()))
    try:
        return box.status()
    finally:
        box.close()


@mcp_app.command("list")
def list_servers() -> None:
    """Show each server, its state and its tools (this starts the servers briefly)."""
    console = Console()
    statuses = server_statuses(get_settings())
    if not statuses:
        console.print(f"No MCP servers: add them to {CONFIG_FILE} in the workspace.")
        return
    for status in statuses:
        line = f"{status.name} ({status.transport}): {status.state}"
        console.print(line + (f" - {status.reason}" if status.reason else ""), markup=False)
        for tool in status.tools:
            console.print(f"    {tool}", markup=False)


def mcp_checks(settings: Settings) -> list[Check]:
    """One check per configured server; none when there is no mcp.json. Never raises."""
    try:
        statuses = server_statuses(settings)
    except ConfigurationError as exc:
        return [Check("mcp", "fail", str(exc), f"fix {CONFIG_FILE} in the workspace")]
    return [
        Check(f"mcp {s.name}", "ok", f"{len(s.tools)} tool(s)")
        if s.state == "running"
        else Check(f"mcp {s.name}", "fail", s.reason or s.state, "see `harness mcp list`")
        for s in statuses
    ]
