"""`harness mcp list`: the MCP servers of the operator's config file (MCP_CONFIG), their state
and their tools; and the doctor's check of the same. Neither ever starts a server named in
`workspace/mcp.json`: they say it is ignored, and how to adopt it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.console import Console

from harness.checks import Check
from harness.commands.output import JsonOption, emit_json
from harness.commands.progress import waiting
from harness.errors import ConfigurationError
from harness.mcp import (
    adoption_advice,
    adoption_steps,
    config_path,
    ignored_workspace_file,
    load_config,
)
from harness.mcp.watch import RELOAD_INTERVAL
from harness.settings import Settings, get_settings

if TYPE_CHECKING:
    from harness.mcp.toolbox import ServerStatus

mcp_app = typer.Typer(
    help="MCP servers configured in the operator's mcp.json (MCP_CONFIG, outside the workspace).",
    no_args_is_help=True,
)


def server_statuses(settings: Settings) -> list[ServerStatus]:
    """Start every server of the MCP_CONFIG file, list its tools, stop it. Raises
    `ConfigurationError` for MCP_CONFIG inside the workspace or an unreadable file."""
    configs = load_config(config_path(settings))
    if not configs:  # nothing to start: the toolbox and the servers' modules stay unloaded
        return []
    from harness.mcp.toolbox import McpToolbox  # the MCP SDK, and the tools: ~50 ms

    box = McpToolbox(configs)
    try:
        return box.status()
    finally:
        box.close()


@mcp_app.command("list")
def list_servers(as_json: JsonOption = False) -> None:
    """Show each server of MCP_CONFIG, its state and its tools (this starts the servers
    briefly). Workers pick up a change of that file within a few seconds. `--json`:
    `{"config", "ignored_workspace_file", "servers": [{"name", "transport", "state",
    "reason", "tools"}]}`."""
    console = Console()
    settings = get_settings()
    path = config_path(settings)
    ignored = ignored_workspace_file(settings)
    if as_json:
        emit_json({"config": str(path), "ignored_workspace_file": ignored and str(ignored),
                   "servers": server_statuses(settings)})  # fmt: skip
        return
    if ignored is not None:
        console.print(f"! {adoption_advice(ignored, path)}", markup=False, soft_wrap=True)
    with waiting("starting the MCP servers to list their tools"):
        statuses = server_statuses(settings)
    if not statuses:
        console.print(f"No MCP servers: add them to {path} (MCP_CONFIG).", markup=False)
        return
    console.print(f"MCP servers of {path}:", markup=False)
    for status in statuses:
        line = f"{status.name} ({status.transport}): {status.state}"
        console.print(line + (f" - {status.reason}" if status.reason else ""), markup=False)
        for tool in status.tools:
            console.print(f"    {tool}", markup=False)
    console.print(
        f"Running workers read this file again within {RELOAD_INTERVAL:g} s of their next "
        "model call, restarting the servers whose entry changed.",
        markup=False,
        soft_wrap=True,
    )


def mcp_checks(settings: Settings) -> list[Check]:
    """One check per server of the MCP_CONFIG file (none without one), and a warning when the
    workspace holds an ignored `mcp.json`. Never raises."""
    try:
        path = config_path(settings)
    except ConfigurationError as exc:
        return [Check("mcp", "fail", str(exc), "set MCP_CONFIG to a file outside the workspace")]
    checks: list[Check] = []
    ignored = ignored_workspace_file(settings)
    if ignored is not None:
        detail = f"{ignored} is ignored: the agent can write it, so it starts no server"
        checks.append(Check("mcp workspace file", "warn", detail, adoption_steps(ignored, path)))
    try:
        statuses = server_statuses(settings)
    except ConfigurationError as exc:
        return [*checks, Check("mcp", "fail", str(exc), f"fix {path}")]
    return checks + [
        Check(f"mcp {s.name}", "ok", f"{len(s.tools)} tool(s)")
        if s.state == "running"
        else Check(f"mcp {s.name}", "fail", s.reason or s.state, "see `harness mcp list`")
        for s in statuses
    ]
