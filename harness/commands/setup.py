"""`harness setup <channel>` registers the bot with a platform; `harness poll <channel>` receives
a channel's messages without a public URL (Telegram polling, Slack Socket Mode).

    app.command(cls=SetupCommand)(setup)
    app.command()(poll)
    processes.update(extra_processes())   # in `harness up`: one listener per such channel

Every command loads the channel plug-ins first (`harness.composition.plug_in_channels`) and
goes through `channels.registry`; the platform details stay in `channels/`.
"""

from __future__ import annotations

import shlex
import signal
import sys
import threading
from typing import Annotated

import typer
from typer import _click as click  # typer vendors its own click
from typer.core import TyperCommand

from channels.errors import (
    AuthenticationError,
    ChannelNotConfiguredError,
    PlatformError,
    UnknownChannelError,
)
from channels.listeners import listener_channels, run_listener
from channels.registry import get_channel, plugin
from channels.tokens import blank_tokens
from harness.commands.exit_codes import FAILED, REFUSED, USAGE, exit_code_for
from harness.commands.output import JsonOption, emit_json
from harness.commands.progress import waiting
from harness.composition import plug_in_channels
from harness.errors import ConfigurationError, HarnessError
from harness.observe.json_logs import configure_logging
from harness.settings import get_settings


def set_up_channel(name: str) -> str:
    """Run channel `name`'s setup and return its report. Without the channel's credentials, its
    plug-in may still help: its `unconfigured_report` (Slack prints the manifest to create the
    app from). Raises `ChannelNotConfiguredError`, `UnknownChannelError` or a
    `PlatformError`."""
    plug_in_channels()
    try:
        channel = get_channel(name)
    except ChannelNotConfiguredError:
        loaded = plugin(name)
        if loaded is None or loaded.unconfigured_report is None:
            raise
        return loaded.unconfigured_report()
    return channel.setup()


class SetupCommand(TyperCommand):
    """`harness setup`, whose help ends with the channels it can set up: the plug-ins loaded
    when the help is shown, not when the command line is built (importing wires nothing)."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The help, with the loaded channels' names as its epilog."""
        self.epilog = f"Channels: {', '.join(plug_in_channels()) or 'none installed'}."
        super().format_help(ctx, formatter)


def setup(
    channel: Annotated[str, typer.Argument(help="The channel's name (see the list below).")],
    as_json: JsonOption = False,
) -> None:
    """Register the bot with a chat platform (webhook, app manifest).

    Telegram: point it at PUBLIC_URL/webhooks/telegram (secret token, allowed updates), or
    remove the webhook when TELEGRAM_MODE=polling. Slack: check the bot token and print the
    app manifest (scopes, events, request URL) to create or update the app with. Prints what
    the platform answered; exits 2 for an unknown channel or a missing setting, 5 when the
    platform refused the token, 1 for any other platform error. `--json`: `{"channel",
    "report"}`."""
    try:
        with waiting(f"asking {channel}", hidden=as_json):
            report = set_up_channel(channel)
    except (ConfigurationError, UnknownChannelError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=USAGE) from exc
    except PlatformError as exc:
        typer.echo(f"error: {exc}", err=True)
        refused = isinstance(exc, AuthenticationError)  # the platform refused the token
        raise typer.Exit(code=REFUSED if refused else FAILED) from exc
    if as_json:
        emit_json({"channel": channel, "report": report})
        return
    typer.echo(report)


def poll(
    channel: Annotated[str, typer.Argument(help="The channel: telegram or slack.")],
    restart: Annotated[
        bool,
        typer.Option(
            help="On any failure (bad token, platform or Redis down) log one line and start "
            "again with backoff (1 s doubling to 60 s) instead of exiting; `harness up` uses it."
        ),
    ] = False,
) -> None:
    """Receive a channel's messages without a public URL (Telegram getUpdates with
    TELEGRAM_MODE=polling, Slack Socket Mode with SLACK_APP_TOKEN) until Ctrl-C."""
    from harness.fleet.restarts import run_with_restarts
    from harness.runtime import get_runtime

    configure_logging(get_settings().log_level, get_settings().log_format)
    stop = threading.Event()

    def interrupt(signum: int, frame: object) -> None:
        # Stop now, even inside a long poll: whatever was fetched but not yet confirmed is
        # fetched again by the next poller, and deduplicated by the bus.
        stop.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    plug_in_channels()
    try:
        if restart:
            run_with_restarts(
                lambda: run_listener(channel, get_runtime(), stop), stop, f"{channel} listener"
            )
        else:
            run_listener(channel, get_runtime(), stop)
    except KeyboardInterrupt:
        return
    except HarnessError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(code=exit_code_for(exc)) from exc


def extra_processes() -> dict[str, str]:
    """Processes `harness up` adds to the fleet: `<channel>-listener` running
    `exec <this python> -m harness.cli poll <channel> --restart` (it restarts itself with backoff
    rather than exit, so it cannot stop the fleet) for each configured channel that receives
    messages without webhooks (`channels.listeners.listener_channels`), leaving out a channel
    any of whose tokens is set but empty (`TELEGRAM_BOT_TOKEN=` in a copied `.env.example`).
    Reads the channels' settings from the environment, as the fleet's processes do. Touches
    no network."""
    plug_in_channels()
    python = f"exec {shlex.quote(sys.executable)}"  # the shell gives way, as in the fleet's
    return {
        f"{name}-listener": f"{python} -m harness.cli poll {name} --restart"
        for name in listener_channels()
        if not blank_tokens(name)
    }
