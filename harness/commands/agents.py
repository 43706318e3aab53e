"""`harness agents`: the default agent and every named one, with their load errors, and the
networks chats are bound to."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from harness.agent.roster.listing import AgentRow, AgentsTable, agents_table
from harness.agent.roster.load import load_roster
from harness.commands.networks import listed_networks
from harness.commands.output import JsonOption, print_rows
from harness.errors import HarnessError
from harness.mcp import config_path, load_config
from harness.settings import Settings, get_settings

console = Console()


def agents(
    as_json: JsonOption = False,
) -> None:
    """Every agent (the default one and those of workspace/agents: model, tools, turn limit,
    bindings), the chats bound to networks, and every agent file that failed to load. Starts
    no MCP server; exits 0 even when some files are wrong (they are listed)."""
    # Imported here, not for `harness agents --help`. Only the tools' names are listed: no
    # tool is imported (harness.agent.tool_names), nor what runs an agent.
    from harness.agent.tool_names import fleet_tool_names, subagent_tool_names

    settings = get_settings()
    servers, mcp_problem = _mcp_servers(settings)
    workspace = settings.agent_workspace.resolve()
    roster = load_roster(workspace)
    networks, missing = listed_networks(workspace, roster)
    table = agents_table(
        settings,
        roster,
        fleet_tool_names(settings),
        subagent_tool_names(settings),
        servers,
        networks=networks,
    )
    if missing:
        table.warnings.append(missing)
    if mcp_problem:
        table.warnings.insert(0, f"MCP servers not known: {mcp_problem}")
    if as_json:
        print(table.model_dump_json(indent=2))
        return
    _print(table)


def _mcp_servers(settings: Settings) -> tuple[list[str], str]:
    """The names of the MCP servers configured and enabled, and why none could be read."""
    try:
        configs = load_config(config_path(settings))
    except (HarnessError, OSError, ValueError) as exc:
        return [], str(exc)
    return [c.name for c in configs if not c.disabled and c.problem is None], ""


def _print(table: AgentsTable) -> None:
    print_rows(["agent", "model", "tools", "turns", "bindings"], [_cells(r) for r in table.agents])
    bound = [row for row in table.networks if row.bindings]
    if bound:  # every network is in `harness networks`; here, those that answer chats
        nets = [
            [f"network:{net.name}", ", ".join(net.agents),
             "\n".join(f"{b.where} ({b.source})" for b in net.bindings)]
            for net in bound
        ]  # fmt: skip
        print_rows(["network", "agents", "bindings"], nets)
    for error in table.errors:
        console.print(f"[red]failed to load[/red] {escape(error)}", highlight=False, soft_wrap=True)
    for warning in table.warnings:
        console.print(
            f"[yellow]warning[/yellow] {escape(warning)}", highlight=False, soft_wrap=True
        )


def _cells(row: AgentRow) -> list[str]:
    name = f"{row.name}\n{row.description}"
    model = f"{row.provider}: {row.model}"
    if row.temperature is not None:
        model += f"\ntemperature {row.temperature}"
    bindings = "\n".join(f"{b.where} ({b.source})" for b in row.bindings)
    return [name, model, ", ".join(row.tools), str(row.max_turns), bindings]
