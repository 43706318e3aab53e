"""The `harness` command line: run the fleet or one process, publish, and inspect runs."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from harness.commands.functions import functions, sidecar
from harness.commands.setup import poll, setup_app
from harness.errors import HarnessError
from harness.events import Event
from harness.settings import get_settings

app = typer.Typer(
    help="Harness: chat agents on a durable Celery + Redis worker fleet.", no_args_is_help=True
)
events_app = typer.Typer(help="The events stream.", no_args_is_help=True)
runs_app = typer.Typer(help="Recent runs and their steps.", invoke_without_command=True)
app.add_typer(events_app, name="events")
app.add_typer(runs_app, name="runs")
app.add_typer(setup_app, name="setup")
app.command()(poll)
app.command()(sidecar)
app.command()(functions)
console = Console()
err_console = Console(stderr=True)


def _setup_logging() -> None:
    logging.basicConfig(
        level=get_settings().log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _fail(exc: HarnessError) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {exc}")
    return typer.Exit(code=2)


@app.command()
def up() -> None:
    """Run the whole fleet in the foreground (web, worker, scheduler); Redis is embedded when
    REDIS_URL is unset."""
    from harness.supervisor import run_fleet

    _setup_logging()
    try:
        raise typer.Exit(code=run_fleet(get_settings()))
    except HarnessError as exc:
        raise _fail(exc) from exc


@app.command()
def worker(
    functions: Annotated[
        list[str] | None, typer.Option("--functions", "-f", help="Extra module(s) of functions.")
    ] = None,
    concurrency: Annotated[int | None, typer.Option(help="Runs at once (threads).")] = None,
    queues: Annotated[str, typer.Option(help="Comma-separated queues to consume.")] = "harness",
) -> None:
    """Run a worker that advances runs of the loaded functions."""
    from harness.runtime.worker import function_modules, run_worker

    _setup_logging()
    settings = get_settings()
    extra = [m for item in functions or [] for m in item.split(",") if m]
    try:
        run_worker(
            settings,
            function_modules(settings, extra),
            concurrency or settings.worker_concurrency,
            [q for q in queues.split(",") if q],
        )
    except HarnessError as exc:
        raise _fail(exc) from exc


@app.command()
def scheduler() -> None:
    """Run the scheduler: timers, recovery of runs whose worker died, and cron."""
    from harness.runtime.worker import run_scheduler_process

    _setup_logging()
    try:
        run_scheduler_process(get_settings())
    except HarnessError as exc:
        raise _fail(exc) from exc


@app.command()
def web() -> None:
    """Serve the HTTP API (health, events, channel webhooks) with uvicorn."""
    from harness.web import serve

    _setup_logging()
    try:
        serve(get_settings())
    except HarnessError as exc:
        raise _fail(exc) from exc


def _publish(event: Event) -> str:
    from harness.runtime import get_runtime, publish

    try:
        result = publish(event, runtime=get_runtime())
    except HarnessError as exc:
        raise _fail(exc) from exc
    if result.duplicate:
        console.print(f"event {result.event_id} was already published; nothing done")
    else:
        console.print(f"published {event.name} {result.event_id} -> {len(result.run_ids)} run(s)")
    return result.event_id


@app.command()
def send(
    text: Annotated[str, typer.Argument(help="The message.")],
    session: Annotated[str, typer.Option(help="Session key: one conversation.")] = "cli-default",
    wait: Annotated[bool, typer.Option(help="Wait for the agent's reply and print it.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the reply.")] = 300.0,
) -> None:
    """Send a message to the agent as `agent.message.received` on the `cli` channel."""
    from harness.chat_client import TERMINAL_SENDER, ChatSession, ChatTimeoutError, chat_message
    from harness.runtime import get_runtime

    if not wait:
        _publish(chat_message(text, session, channel="cli", sender=TERMINAL_SENDER))
        return
    try:
        reply = ChatSession(get_runtime(), session, timeout=timeout).ask(text)
    except ChatTimeoutError as exc:
        err_console.print(f"no reply within {timeout:.0f}s")
        raise typer.Exit(code=1) from exc
    except HarnessError as exc:
        raise _fail(exc) from exc
    console.print(reply.response)


@app.command("chat")
def chat_command(
    session: Annotated[str | None, typer.Option(help="Resume this session key.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each reply.")] = 300.0,
) -> None:
    """Chat with the agent in the terminal through the whole fleet (`/new`, `/exit`)."""
    from harness.commands.chat import chat

    chat(session=session, timeout=timeout)


@app.command("publish")
def publish_command(
    name: Annotated[str, typer.Argument(help="Event name, e.g. app/invoice.paid.")],
    data: Annotated[str, typer.Option(help="Event data as a JSON object.")] = "{}",
    event_id: Annotated[
        str | None, typer.Option("--id", help="Event id (idempotency key).")
    ] = None,
) -> None:
    """Publish any event."""
    try:
        payload = json.loads(data)
    except json.JSONDecodeError as exc:
        err_console.print(f"[red]error:[/red] --data is not JSON: {exc}")
        raise typer.Exit(code=2) from exc
    raw: dict[str, Any] = {"name": name, "data": payload}
    if event_id:
        raw["id"] = event_id
    from harness.events import parse_event

    try:
        _publish(parse_event(raw))
    except HarnessError as exc:
        raise _fail(exc) from exc


@events_app.command("tail")
def events_tail(
    from_start: Annotated[bool, typer.Option(help="Print the retained history first.")] = False,
    count: Annotated[int, typer.Option(help="Stop after this many events (0 = follow).")] = 0,
) -> None:
    """Follow the events stream, one JSON event per line."""
    from harness.runtime import get_runtime
    from harness.runtime.stream import read_events

    rt = get_runtime()
    cursor = "0-0" if from_start else "$"
    printed = 0
    try:
        while count == 0 or printed < count:
            cursor, events = read_events(rt, cursor)
            for event in events:
                print(json.dumps(event, separators=(",", ":")), flush=True)
                printed += 1
                if count and printed >= count:
                    return
    except KeyboardInterrupt:
        return


def _when(ms: str) -> str:
    if not ms or ms == "0":
        return ""
    return datetime.fromtimestamp(int(ms) / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


@runs_app.callback()
def runs(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(help="How many runs.")] = 20,
) -> None:
    """List recent runs with their status, newest first."""
    if ctx.invoked_subcommand is not None:
        return
    from harness.runtime import get_runtime

    table = Table("run", "function", "status", "attempt", "created (UTC)", "ended (UTC)", "error")
    for row in get_runtime().ledger.recent(limit):
        table.add_row(
            row["id"], row["function_id"], row["status"], row["attempt"],
            _when(row["created_at"]), _when(row["ended_at"]), row["error"][:60],
        )  # fmt: skip
    console.print(table)


@runs_app.command("show")
def runs_show(run_id: str) -> None:
    """Show one run's record and its steps."""
    from harness.runtime import get_runtime

    rt = get_runtime()
    record = rt.ledger.run(run_id)
    if record is None:
        err_console.print(f"no run {run_id!r} (unknown, or older than the retention period)")
        raise typer.Exit(code=1)
    console.print_json(json.dumps({"run": record, "steps": rt.ledger.journal(run_id)}))


@runs_app.command("cancel")
def runs_cancel(run_id: str) -> None:
    """Ask a live run to stop at its next step boundary."""
    from harness.runtime import get_runtime

    if get_runtime().ledger.request_cancel(run_id, "cancelled from the command line"):
        console.print(f"run {run_id} will stop at its next step")
    else:
        err_console.print(f"run {run_id} is not live")
        raise typer.Exit(code=1)


if __name__ == "__main__":
    app()
