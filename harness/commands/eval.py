"""`harness eval`: run the eval suites against the configured model, print the table, write
the JSON and HTML reports; or `--compare` two JSON reports."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from harness.commands.exit_codes import FAILED
from harness.commands.progress import waiting
from harness.errors import ConfigurationError
from harness.evals.html import render_html
from harness.evals.results import Attempt
from harness.evals.summary import Report, build_report
from harness.evals.tables import compare_table, report_table
from harness.llm.factory import build_provider
from harness.settings import get_settings

NO_MODEL = "skipped: no model key (set ANTHROPIC_API_KEY or OPENAI_API_KEY, or a base URL)"


def eval_command(
    suites: Annotated[
        list[str] | None, typer.Argument(help="Suite names (evals/NAME.yaml) or files; all.")
    ] = None,
    repeat: Annotated[int, typer.Option(min=1, help="Runs of each case (a pass rate).")] = 1,
    parallel: Annotated[int, typer.Option(min=1, help="Cases at once (processes).")] = 1,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the JSON report.")] = None,
    html_out: Annotated[Path | None, typer.Option("--html", help="Write the HTML report.")] = None,
    compare: Annotated[
        tuple[Path, Path] | None,
        typer.Option(help="Show two JSON reports side by side (runs nothing)."),
    ] = None,
    folder: Annotated[Path, typer.Option("--suites-dir", help="Where suites live.")] = Path(
        "evals"
    ),
) -> None:
    """Run eval suites through the agent's real turn and grade them; exit 1 when a case
    failed. Without a model key: one line, exit 0."""
    console = Console()
    if compare is not None:
        console.print(compare_table(*(read_report(p) for p in compare)))
        return
    from harness.evals.runner import eval_redis, run_suites  # the agent stack, only to run
    from harness.evals.suite import find_suites

    settings = get_settings()
    provider = build_provider(settings)
    if provider is None:
        typer.echo(NO_MODEL)
        return
    try:
        found = find_suites(folder, suites or [])
    except ConfigurationError as exc:
        raise typer.BadParameter(str(exc)) from exc
    started = datetime.now(UTC).isoformat(timespec="seconds")

    done: list[Attempt] = []
    with waiting("running the eval cases") as wait:

        def tick(attempt: Attempt) -> None:
            done.append(attempt)
            if not wait.shown:  # off a terminal: one mark per case, as before
                console.print("." if attempt.passed else "F", end="")
                return
            failed = sum(1 for a in done if not a.passed)
            wait.update(f"running the eval cases: {len(done)} done, {failed} failed")

        with eval_redis(settings) as url:
            attempts = run_suites(
                found, settings, url, repeat=repeat, parallel=parallel, progress=tick
            )
    if not wait.shown:
        console.print()
    report = build_report(provider.model, started, repeat, attempts)
    console.print(report_table(report))
    for summary in report.cases:
        for failure in summary.failures:
            console.print(f"  {summary.suite}/{summary.case}: {failure}", markup=False)
    if json_out is not None:
        json_out.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    if html_out is not None:
        html_out.write_text(render_html(report), encoding="utf-8")
    if report.total.passed < report.total.runs:
        raise typer.Exit(code=FAILED)


def read_report(path: Path) -> Report:
    """A JSON report written by `--json`. Raises `typer.BadParameter` for anything else."""
    try:
        return Report.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(f"{path}: not an eval report ({exc})") from exc
