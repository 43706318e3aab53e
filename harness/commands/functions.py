"""`harness functions` (what is registered, and what failed to load) and `harness sidecar`."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console

from harness.commands.output import JsonOption, print_rows
from harness.fleet.liveness import liveness_for
from harness.observe.json_logs import configure_logging
from harness.runtime.banner import hold_start_up_lines
from harness.settings import get_settings

console = Console()


def sidecar() -> None:
    """Load and run the agent's functions from workspace/functions, reloading on change
    (SIDECAR_ENABLED=false: idle)."""
    from harness.sidecar.supervisor import run_sidecar

    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)
    hold_start_up_lines()  # under a quiet `harness up`: one line once the functions load
    keeper = liveness_for(settings, "sidecar")  # `harness health --process sidecar`
    keeper.start()
    try:
        run_sidecar(settings)  # its errors are reported by `one_line_errors`, code and all
    finally:
        keeper.stop()


def _when(ms: int) -> str:
    if not ms:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def functions(
    as_json: JsonOption = False,
) -> None:
    """Every registered function (source, triggers, next cron, last run) and every file of
    workspace/functions that failed to load."""
    from harness.runtime import get_runtime
    from harness.sidecar.builtins import fleet_builtin_ids
    from harness.sidecar.sandbox import FunctionSandbox, refusal
    from harness.sidecar.status import function_table

    settings = get_settings()
    table = function_table(get_runtime(), fleet_builtin_ids())
    if settings.sidecar_enabled:
        sandbox = FunctionSandbox.from_settings(settings)
        table.refused = refusal(sandbox, settings.agent_workspace) or ""
    if as_json:
        print(table.model_dump_json(indent=2))
        return
    rows = []
    for row in table.functions:
        source = f"{row.source}: {row.file}" if row.file else row.source
        last = ""
        if row.last_run is not None:
            last = f"{row.last_run.status} {_when(row.last_run.created_at_ms)}"
        rows.append([row.id, source, "\n".join(row.triggers), row.next_cron or "", last])
    header = ["function", "source", "triggers", "next cron (UTC offset)", "last run"]
    print_rows(header, rows, 1)
    alive = "[green]running[/green]" if table.sidecar_alive else "[red]not running[/red]"
    console.print(f"sidecar: {alive}")
    if table.refused:
        console.print(
            f"[red]functions do not run here:[/red] {table.refused}",
            highlight=False,
            soft_wrap=True,
        )
    for error in table.load_errors:
        console.print(
            f"[red]failed to load[/red] {error.describe()}", highlight=False, soft_wrap=True
        )
    for failure in table.failures[:5]:
        console.print(
            f"[yellow]failed run[/yellow] {failure.function_id} {failure.run_id}: "
            f"{failure.error[:160]}",
            highlight=False,
            soft_wrap=True,
        )
