"""The `harness` command line: run the fleet or one process, talk to the agent, inspect runs.

`main` is the executable. Every command runs under `HarnessGroup`, which turns our errors,
Redis errors and usage errors into one line on stderr and quiets typer's type labels; as a
`LazyGroup`, which imports a command's module only when that command is used, so that
`harness --help` and each command load only what they need.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from harness.commands.catalog import FLEET, LAZY, TALK
from harness.commands.completion import serve_completion
from harness.commands.exit_codes import FAILED
from harness.commands.lazy import LazyGroup
from harness.commands.one_line_errors import fail
from harness.commands.output import JsonOption, emit_json
from harness.commands.progress import waiting
from harness.version import DISTRIBUTION, installed_version

if TYPE_CHECKING:
    from harness.events import Event
    from harness.fleet.liveness import Pulse
    from harness.runtime.worker import Companion
    from harness.settings import Settings


class _Commands(LazyGroup):
    """`harness`'s group: the commands defined below are built with it, those of `LAZY` when
    used (listed after these in `harness --help`, in the table's order)."""

    lazy = LAZY


app = typer.Typer(
    cls=_Commands,
    help="Harness: chat agents on a durable Celery + Redis worker fleet.",
    invoke_without_command=True,
    rich_markup_mode="markdown",
    add_completion=False,  # `harness completion SHELL` instead: see harness.commands.completion
)
events_app = typer.Typer(help="The events stream.", no_args_is_help=True)
console = Console()

PortOption = Annotated[
    int | None,
    typer.Option(min=1, max=65535, help="HTTP port of the web server (overrides PORT)."),
]


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"{DISTRIBUTION} {installed_version()}")
        raise typer.Exit(code=0)


@app.callback()
def harness(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the installed version and exit.",
        ),
    ] = False,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            help="The agent's workspace (sets AGENT_WORKSPACE): which fleet to talk to when "
            "several run, or which one `harness up` starts.",
        ),
    ] = None,
) -> None:
    """Harness: chat agents on a durable Celery + Redis worker fleet."""
    if ctx.invoked_subcommand is None:  # before the fleet's runtime is loaded: help only
        typer.echo(ctx.get_help())
        raise typer.Exit(code=0)
    from harness.composition import use_fleet
    from harness.fleet.follow import follow_running_fleet

    use_fleet()
    if workspace is not None:
        os.environ["AGENT_WORKSPACE"] = str(workspace.expanduser().resolve())
        _forget_settings()
    follow_running_fleet(ctx.invoked_subcommand)  # from another folder: that fleet's settings


def _use_port(port: int | None) -> None:
    """Make `port` the PORT of this process and the fleet processes it starts."""
    if port is not None:
        os.environ["PORT"] = str(port)
        _forget_settings()


def get_settings() -> Settings:
    """This process's settings (`harness.settings.get_settings`). Imported when first asked
    for: loading the settings loads the runtime, which `harness --help` has no use for."""
    from harness.settings import get_settings as current_settings

    return current_settings()


def _forget_settings() -> None:
    """Read the settings again at the next `get_settings` (after changing the environment)."""
    from harness.settings import get_settings as current_settings

    current_settings.cache_clear()


def _setup_logging(*, says_when_up: bool = False) -> None:
    """Logs as the settings say; `says_when_up`: a fleet process that says one line once it
    is up (`harness.runtime.banner.say_up`), so a quiet start holds its routine lines."""
    from harness.observe.json_logs import configure_logging
    from harness.runtime.banner import hold_start_up_lines

    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)
    if says_when_up:
        hold_start_up_lines()


@contextmanager
def _liveness(process: str, pulse: Pulse | None = None) -> Iterator[None]:
    """Keep `process`'s liveness file fresh while the block runs (`harness health`)."""
    from harness.fleet.liveness import liveness_for

    keeper = liveness_for(get_settings(), process, pulse)
    keeper.start()
    try:
        yield
    finally:
        keeper.stop()


@app.command(rich_help_panel=FLEET)
def up(
    port: PortOption = None,
    only: Annotated[
        str | None,
        typer.Option(
            help="Run only these, comma-separated: web, worker, scheduler, gateway, sidecar, "
            "<channel>-listener, redis (the embedded one; without it, the Redis of REDIS_URL "
            "or of this workspace's running fleet)."
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Print every process's whole start-up (Celery's banners, uvicorn's lines), "
            "not one line each.",
        ),
    ] = False,
) -> None:
    """Run the whole fleet in the foreground (web, worker, scheduler); Redis is embedded when
    REDIS_URL is unset."""
    from harness.fleet.selection import UnknownProcessError
    from harness.fleet.selection import only as select
    from harness.fleet.supervisor import default_processes, exec_fleet

    _use_port(port)
    _setup_logging()
    processes, embedded = None, True
    if only is not None:
        try:
            chosen = select(default_processes(), only)
        except UnknownProcessError as exc:
            raise typer.BadParameter(str(exc), param_hint="--only") from exc
        processes, embedded = chosen.processes, chosen.embedded_redis
    # this process becomes the fleet's slim supervisor, which exits with the fleet's code
    exec_fleet(get_settings(), processes, embedded_redis=embedded, quiet=not verbose)


@app.command(rich_help_panel=FLEET)
def worker(
    functions: Annotated[
        list[str] | None, typer.Option("--functions", "-f", help="Extra module(s) of functions.")
    ] = None,
    concurrency: Annotated[int | None, typer.Option(help="Runs at once (threads).")] = None,
    queues: Annotated[
        str, typer.Option(help="Comma-separated queues to consume: the runs' and the replies'.")
    ] = "harness,harness-delivery",
    engine: Annotated[
        bool,
        typer.Option(
            "--engine",
            help="Run only the --functions modules, on the engine alone: no agent, no channels "
            "(docs/engine.md).",
        ),
    ] = False,
    with_scheduler: Annotated[
        bool,
        typer.Option(
            "--with-scheduler",
            help="Also run the scheduler, on a thread of this process (what `harness up` does "
            "on one host): one process fewer.",
        ),
    ] = False,
    with_sidecar: Annotated[
        bool,
        typer.Option(
            "--with-sidecar",
            help="Also supervise the agent's functions (the sidecar), on a thread of this "
            "process (what `harness up` does on one host): one process fewer.",
        ),
    ] = False,
    gateway: Annotated[
        bool,
        typer.Option(
            "--gateway/--no-gateway",
            help="Make the model calls that runs park on here (MODEL_CALLS=gateway); "
            "--no-gateway: a `harness gateway` process does (what `harness up` runs).",
        ),
    ] = True,
) -> None:
    """Run a worker that advances runs of the loaded functions."""
    from harness.composition import run_worker
    from harness.fleet_functions import function_modules

    _setup_logging(says_when_up=True)
    settings = get_settings()
    extra = [m for item in functions or [] for m in item.split(",") if m]
    with contextlib.ExitStack() as stack:
        stack.enter_context(_liveness("worker"))
        companions: list[Companion] = []
        if with_scheduler:
            companions.append(_scheduler_thread(stack, settings))
        if with_sidecar:
            companions.append(_sidecar_thread(stack, settings))
        if engine:
            _run_engine_worker(settings, extra, concurrency, queues, tuple(companions))
            return
        run_worker(
            settings,
            function_modules(settings, extra),
            concurrency or settings.worker_concurrency,
            [q for q in queues.split(",") if q],
            tuple(companions),
            gateway=gateway,
        )


def _scheduler_thread(stack: contextlib.ExitStack, settings: Settings) -> Companion:
    """The scheduler a worker runs on a thread (`--with-scheduler`), its liveness file kept
    fresh by its passes for as long as `stack` is open."""
    from harness.fleet.liveness import Pulse
    from harness.runtime.scheduler import SchedulerThread

    pulse = Pulse()
    stack.enter_context(_liveness("scheduler", pulse))
    return SchedulerThread(settings.harness_reaper_interval, pulse.beat)


def _sidecar_thread(stack: contextlib.ExitStack, settings: Settings) -> Companion:
    """The sidecar a worker supervises on a thread (`--with-sidecar`), its liveness file kept
    fresh for as long as `stack` is open; under a quiet start its routine lines wait for its
    own `sidecar ready` line, as in a process of its own."""
    from harness.runtime.banner import GATE
    from harness.sidecar.supervisor import SidecarThread

    GATE.hold_part("harness.sidecar")
    stack.enter_context(_liveness("sidecar"))
    return SidecarThread(settings)


def _run_engine_worker(
    settings: Settings,
    modules: list[str],
    concurrency: int | None,
    queues: str,
    companions: tuple[Companion, ...] = (),
) -> None:
    from harness.runtime import assembly
    from harness.runtime import worker as engine_worker

    if not modules:
        raise typer.BadParameter("name the module(s) of your functions", param_hint="--functions")
    assembly.use_engine()
    engine_worker.run_worker(
        settings,
        modules,
        concurrency or settings.worker_concurrency,
        [q for q in queues.split(",") if q],
        companions=companions,
    )


@app.command(rich_help_panel=FLEET)
def scheduler() -> None:
    """Run the scheduler: timers, recovery of runs whose worker died, and cron."""
    from harness.fleet.liveness import Pulse
    from harness.runtime.worker import run_scheduler_process

    _setup_logging(says_when_up=True)
    pulse = Pulse()
    with _liveness("scheduler", pulse):
        run_scheduler_process(get_settings(), on_pass=pulse.beat)


HostOption = Annotated[
    str | None,
    typer.Option(help="Address to bind (overrides HOST, default 127.0.0.1; 0.0.0.0: all)."),
]


@app.command(rich_help_panel=FLEET)
def web(
    port: PortOption = None,
    host: HostOption = None,
    workers: Annotated[
        int, typer.Option(min=1, help="Web server processes, each with its own socket on the port.")
    ] = 1,
) -> None:
    """Serve the HTTP API (health, events, channel webhooks) with uvicorn."""
    from harness.web import serve

    if host:
        os.environ["HOST"] = host
        _forget_settings()
    _use_port(port)
    _setup_logging(says_when_up=True)
    serve(get_settings(), workers=workers)


def _publish(event: Event, as_json: bool = False) -> str:
    """Publish `event` and say what happened; `as_json`: `{"event_id", "name", "duplicate",
    "run_ids"}`."""
    from harness.runtime import get_runtime, publish

    result = publish(event, runtime=get_runtime())
    if as_json:
        emit_json({"event_id": result.event_id, "name": event.name,
                   "duplicate": result.duplicate, "run_ids": result.run_ids})  # fmt: skip
    elif result.duplicate:
        console.print(f"event {result.event_id} was already published; nothing done")
    else:
        console.print(f"published {event.name} {result.event_id} -> {len(result.run_ids)} run(s)")
    return result.event_id


@app.command(rich_help_panel=TALK)
def send(
    text: Annotated[str, typer.Argument(help="The message.")],
    session: Annotated[str, typer.Option(help="Session key: one conversation.")] = "cli-default",
    wait: Annotated[bool, typer.Option(help="Wait for the agent's reply and print it.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the reply.")] = 300.0,
    as_json: JsonOption = False,
) -> None:
    """Send a message to the agent as `agent.message.received` on the `cli` channel.
    `--json`: what was published (as `publish --json`); with --wait, `{"response", "run_id",
    "session_key"}`."""
    from harness.chat_client import TERMINAL_SENDER, ChatSession, ChatTimeoutError, chat_message
    from harness.runtime import get_runtime

    if not wait:
        _publish(chat_message(text, session, channel="cli", sender=TERMINAL_SENDER), as_json)
        return
    try:
        with waiting("waiting for the agent's reply"):
            reply = ChatSession(get_runtime(), session, timeout=timeout).ask(text)
    except ChatTimeoutError as exc:
        raise fail([f"no reply within {timeout:.0f}s"], FAILED) from exc
    if as_json:
        emit_json(reply)
        return
    console.print(reply.response)


@app.command("chat", rich_help_panel=TALK)
def chat_command(
    session: Annotated[str | None, typer.Option(help="Resume this session key.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each reply.")] = 300.0,
) -> None:
    """Chat with the agent in the terminal through the whole fleet (`/new`, `/exit`)."""
    from harness.commands.chat import chat

    chat(session=session, timeout=timeout)


@app.command("publish", rich_help_panel=TALK)
def publish_command(
    name: Annotated[str, typer.Argument(help="Event name, e.g. app/invoice.paid.")],
    data: Annotated[str, typer.Option(help="Event data as a JSON object.")] = "{}",
    event_id: Annotated[
        str | None, typer.Option("--id", help="Event id (idempotency key).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Publish any event. `--json`: `{"event_id", "name", "duplicate", "run_ids"}`."""
    try:
        payload = json.loads(data)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint="--data") from exc
    raw: dict[str, Any] = {"name": name, "data": payload}
    if event_id:
        raw["id"] = event_id
    from harness.events import parse_event

    _publish(parse_event(raw), as_json)


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


def main() -> None:
    """The `harness` executable (and `python -m harness.cli`)."""
    serve_completion()
    typer.main.get_command(app).main(prog_name="harness")


if __name__ == "__main__":
    main()
