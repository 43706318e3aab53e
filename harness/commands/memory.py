"""`harness memory`: the versions of MEMORY.md, and distilling the daily logs now.

    harness memory history            saved versions (and held-back candidates) with sizes
    harness memory show [VERSION]     print one version (default: the current file);
                                      --rejected NAME prints a held-back distillation
    harness memory restore VERSION    bring a version back (the current text is saved first)
    harness memory distill [--force]  run agent-heartbeat now, through the bus

`history`, `show` and `restore` work on the workspace's files directly, so they work with the
fleet down (but `restore` with HARNESS_SHARED_ROOT set takes the fleet's Redis lock);
`distill` needs a worker, like any function. Each takes `--json` (see docs/cli.md); an unknown
version or held-back name exits 4 (not found).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo

import typer
from rich.console import Console

from harness.agent.memory.distill import DISTILL_EVENT, HEARTBEAT_FUNCTION
from harness.agent.memory.history import MemoryHistory, UnknownVersionError
from harness.commands.exit_codes import FAILED, NOT_FOUND
from harness.commands.follow import FollowTimeoutError, follow_run
from harness.commands.one_line_errors import fail
from harness.commands.output import JsonOption, emit_json, print_rows
from harness.commands.progress import waiting
from harness.events import Event
from harness.runtime import get_runtime
from harness.settings import get_settings

memory_app = typer.Typer(
    help="Long-term memory: MEMORY.md's versions, restore, distil now.", no_args_is_help=True
)
console = Console()


def _workspace() -> Path:
    return get_settings().agent_workspace.resolve()


def _now() -> datetime:
    return datetime.now(ZoneInfo(get_settings().agent_timezone))


def _when(moment: datetime) -> str:
    return moment.astimezone(ZoneInfo(get_settings().agent_timezone)).strftime("%Y-%m-%d %H:%M")


@memory_app.command("history")
def history(as_json: JsonOption = False) -> None:
    """List the saved versions of MEMORY.md, newest first, and the held-back candidates.
    `--json`: `{"current_bytes", "versions": [...], "rejected": [...]}`, newest first."""
    store = MemoryHistory(_workspace())
    current = len(store.current().encode("utf-8"))
    versions, rejected = list(reversed(store.versions())), list(reversed(store.rejected()))
    if as_json:
        emit_json({"current_bytes": current, "versions": versions, "rejected": rejected})
        return
    rows = [["current", "", str(current), ""]] + [
        [str(r.version), _when(r.saved_at), str(r.size), r.reason] for r in versions
    ]
    print_rows(["version", "saved until", "bytes", "replaced by"], rows, 1)
    if rejected:
        held = [[i.name, _when(i.saved_at), str(i.size), i.reason] for i in rejected]
        title = "Distillations held back (harness memory show --rejected NAME)"
        print_rows(["name", "at", "bytes", "why"], held, 1, title=title)


@memory_app.command("show")
def show(
    version: Annotated[
        int | None, typer.Argument(help="Version number (see `history`); default: current.")
    ] = None,
    rejected: Annotated[
        str | None, typer.Option("--rejected", help="Print this held-back distillation instead.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Print one version of MEMORY.md (the current file without VERSION). `--json`:
    `{"version": N or null, "rejected": NAME or null, "text": ...}`."""
    store = MemoryHistory(_workspace())
    try:
        if rejected is not None:
            text = store.read_rejected(rejected)
        else:
            text = store.current() if version is None else store.read(version)
    except UnknownVersionError as exc:
        raise fail([str(exc)], NOT_FOUND) from exc
    if as_json:
        emit_json({"version": version, "rejected": rejected, "text": text})
        return
    print(text, end="" if text.endswith("\n") else "\n")


@memory_app.command("restore")
def restore(
    version: Annotated[int, typer.Argument(help="Version number (see `history`).")],
    as_json: JsonOption = False,
) -> None:
    """Make VERSION the current MEMORY.md; the text it replaces is saved as a new version.
    `--json`: `{"restored": VERSION, "saved_as": the replaced text's version or null}`."""
    if get_settings().harness_shared_root is not None:
        get_runtime()  # several hosts: take the fleet's Redis lock, not this host's flock
    store = MemoryHistory(_workspace())
    try:
        saved = store.restore(version, now=_now())
    except UnknownVersionError as exc:
        raise fail([str(exc)], NOT_FOUND) from exc
    if as_json:
        emit_json({"restored": version, "saved_as": None if saved is None else saved.version})
        return
    if saved is None:
        console.print(f"MEMORY.md already holds version {version}; nothing changed")
    else:
        console.print(f"restored version {version}; the replaced text is version {saved.version}")


@memory_app.command("distill")
def distill(
    force: Annotated[
        bool, typer.Option("--force", help="Distil even below the heartbeat's thresholds.")
    ] = False,
    wait: Annotated[bool, typer.Option(help="Wait for the run and print its outcome.")] = True,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the run.")] = 300.0,
    as_json: JsonOption = False,
) -> None:
    """Run agent-heartbeat now through the bus (a worker must be running). `--json`:
    `{"run_id", "status", "result"}` (status "started" with --no-wait)."""
    from harness.runtime import publish, run_id_for

    event = Event(name=DISTILL_EVENT, data={"force": force})
    runtime = get_runtime()
    result = publish(event, runtime=runtime)
    run_id = run_id_for(HEARTBEAT_FUNCTION, result.event_id)
    if run_id not in result.run_ids:
        raise fail([f"no worker has registered {HEARTBEAT_FUNCTION}; start one"], FAILED)
    if not wait:
        if as_json:
            emit_json({"run_id": run_id, "status": "started", "result": None})
            return
        console.print(f"started run {run_id}")
        return
    try:
        with waiting(f"distilling (run {run_id})", hidden=as_json):
            record = follow_run(runtime, run_id, None, timeout_s=timeout)
    except FollowTimeoutError as exc:
        raise fail([f"run {run_id} has not finished after {timeout:.0f}s"], FAILED) from exc
    if record.status != "completed":
        raise fail([f"run {run_id} {record.status}: {record.error}"], FAILED)
    if as_json:
        emit_json({"run_id": run_id, "status": record.status, "result": record.result})
        return
    console.print(_describe(record.result if isinstance(record.result, dict) else {}))


def _describe(outcome: dict[str, Any]) -> str:
    status = str(outcome.get("status", "?"))
    text = f"{status}: {outcome.get('reason', '')}".rstrip(": ")
    if "saved_previous_as" in outcome:
        text += f" (the previous MEMORY.md is version {outcome['saved_previous_as']})"
    tokens = outcome.get("tokens")
    if isinstance(tokens, dict):
        sent = sum(int(v) for k, v in tokens.items() if k != "output_tokens")
        text += f"; {sent} tokens in, {tokens.get('output_tokens', 0)} out"
        text += f", ${float(outcome.get('cost_usd', 0.0)):.4f}"
    if outcome.get("pruned"):
        text += f"; deleted distilled logs: {', '.join(outcome['pruned'])}"
    return text
