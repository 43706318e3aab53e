"""`harness networks`: the networks the workspace declares (`workspace/networks/<name>.md`, and
the `@network`s of `functions/` the sidecar registered), and the files that declare none, with
file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from harness.agent.networks import Networks, NetworkSpec, load_networks
from harness.agent.networks.load import workspace_networks
from harness.agent.roster import Roster
from harness.commands.output import JsonOption, emit_json, print_rows
from harness.errors import HarnessError
from harness.settings import get_settings

console = Console()


def listed_networks(workspace: Path, roster: Roster | None = None) -> tuple[Networks, str]:
    """The workspace's networks with the `@network`s the sidecar registered, and "" ; or, when
    Redis cannot be read, the files' networks alone and why the others are missing."""
    from harness.runtime import get_runtime  # the CLI connects only when a command needs it

    try:
        return workspace_networks(workspace, get_runtime(), roster), ""
    except HarnessError as exc:
        why = f"the @network declarations of functions/ are not listed: {exc}"
        return load_networks(workspace, roster), why


def networks(
    as_json: JsonOption = False,
) -> None:
    """Every network of the workspace (agents, router, state keys, iteration limit) and every
    network file that failed to load."""
    loaded, missing = listed_networks(get_settings().agent_workspace)
    specs = [spec for name in loaded.names() if (spec := loaded.get(name)) is not None]
    if as_json:
        shown = {
            "networks": [_json(spec) for spec in specs],
            "errors": [{"path": e.path, "line": e.line, "error": e.message} for e in loaded.errors],
            "warnings": [missing] if missing else [],
        }
        emit_json(shown)
        return
    rows = [
        [spec.name, ", ".join(spec.agents), _router(spec), str(spec.max_iterations),
         spec.description]
        for spec in specs
    ]  # fmt: skip
    print_rows(["network", "agents", "router", "max", "description"], rows)
    for error in loaded.errors:
        console.print(f"[red]failed to load[/red] {error}", highlight=False, soft_wrap=True)
    if missing:
        console.print(f"[yellow]warning:[/yellow] {missing}", highlight=False, soft_wrap=True)


def _router(spec: NetworkSpec) -> str:
    router = spec.router
    if router.kind == "rules":
        return f"rules ({len(router.rules)})" + (" + agent" if router.hands_over() else "")
    if router.kind == "sequence":
        return "sequence"
    if router.kind == "python":
        return f"python: {router.name}"
    if router.kind == "function":
        return f"function: {router.id}"
    return "agent"


def _json(spec: NetworkSpec) -> dict[str, Any]:
    shown: dict[str, Any] = spec.model_dump(mode="json", by_alias=True, exclude={"instructions"})
    return shown
