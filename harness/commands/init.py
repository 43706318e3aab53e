"""`harness init`: write the `.env` a first start needs, asking only what it must.

    harness init                                   # prompts: provider, key, channels
    ANTHROPIC_API_KEY=... harness init --yes       # scripts: no prompt, key from the environment
    harness init --provider openai --api-key-env MY_KEY --yes

The model key is checked with one one-token call (`harness.commands.key_check`) before
anything is written; a refused key is one line, then the question again (with `--yes`: exit 2,
nothing written). `HARNESS_API_KEY` is generated. Telegram and Slack tokens are optional.
An existing file is replaced only after a yes (or `--yes`); the new one is written whole (a
temporary file renamed over it) with mode 0600. Keys are read without echo and never printed.
"""

from __future__ import annotations

import os
import secrets
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from harness.commands.key_check import PROVIDERS, key_variable, refusal_of
from harness.commands.progress import waiting
from harness.state_dir import write_private

REFUSED_EXIT = 2
"""Exit code when, without prompts (`--yes`), the key was refused or is missing."""


class Provider(StrEnum):
    """The model providers `init` can set up."""

    anthropic = "anthropic"
    openai = "openai"


def _ask_provider() -> str:
    """The provider, asked until the answer is one of `PROVIDERS` (default anthropic)."""
    while True:
        answer = str(
            typer.prompt(f"Model provider ({' or '.join(PROVIDERS)})", default="anthropic")
        )
        if answer.strip().lower() in PROVIDERS:
            return answer.strip().lower()
        typer.echo(f"error: choose one of {', '.join(PROVIDERS)}", err=True)


def _base_url(provider: str) -> str | None:
    """The operator's `<PROVIDER>_BASE_URL` (a compatible server), honoured by the check."""
    return os.environ.get(f"{provider.upper()}_BASE_URL") or None


def _key_from(variable: str | None, provider: str) -> str | None:
    """The key in environment variable `variable` (default: the provider's own), or None."""
    value = os.environ.get(variable or key_variable(provider), "").strip()
    return value or None


def _accepted_key(provider: str, given: str | None, interactive: bool) -> str:
    """A key `provider` accepts: `given` when it is, else asked for until one is (only when
    `interactive`; otherwise one line and exit `REFUSED_EXIT`)."""
    key = given
    while True:
        if key is None:
            if not interactive:
                typer.echo(f"error: no {key_variable(provider)}: set it, or name the variable "
                           "holding the key with --api-key-env", err=True)  # fmt: skip
                raise typer.Exit(REFUSED_EXIT)
            key = str(typer.prompt(key_variable(provider), hide_input=True)).strip()
            if not key:
                key = None
                continue
        with waiting(f"checking the key with {provider}"):
            reason = refusal_of(provider, key, base_url=_base_url(provider))
        if reason is None:
            return key
        typer.echo(f"error: {reason}", err=True)
        if not interactive:
            raise typer.Exit(REFUSED_EXIT)
        key = None


def _optional_token(label: str, variable: str | None, interactive: bool) -> str:
    """A channel token: from environment variable `variable`, else asked for (Enter skips)
    when `interactive`, else ""."""
    if variable:
        return os.environ.get(variable, "").strip()
    if not interactive:
        return ""
    answer = typer.prompt(f"{label} (Enter to skip)", default="", hide_input=True,
                          show_default=False)  # fmt: skip
    return str(answer).strip()


def env_text(provider: str, key: str, channels: dict[str, str]) -> str:
    """The `.env` `init` writes: the provider and its key, a fresh `HARNESS_API_KEY`, and
    the channel settings in `channels` (name -> value, empty ones left out)."""
    lines = [
        f"# Written by `harness init` on {datetime.now(UTC):%Y-%m-%d}; every setting: .env.example",
        f"LLM_PROVIDER={provider}",
        f"{key_variable(provider)}={key}",
        "# The bearer key of /api/chat and /api/events (and the dashboard's login)",
        f"HARNESS_API_KEY={secrets.token_urlsafe(32)}",
    ]
    lines += [f"{name}={value}" for name, value in channels.items() if value]
    return "\n".join(lines) + "\n"


def init(
    provider: Annotated[
        Provider | None, typer.Option(help="The model provider: anthropic or openai.")
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="Read the model key from this environment variable "
            "(default: ANTHROPIC_API_KEY or OPENAI_API_KEY)."
        ),
    ] = None,
    telegram_token_env: Annotated[
        str | None, typer.Option(help="Read TELEGRAM_BOT_TOKEN from this variable.")
    ] = None,
    slack_bot_token_env: Annotated[
        str | None, typer.Option(help="Read SLACK_BOT_TOKEN from this variable.")
    ] = None,
    slack_app_token_env: Annotated[
        str | None, typer.Option(help="Read SLACK_APP_TOKEN (Socket Mode) from this variable.")
    ] = None,
    env_file: Annotated[Path, typer.Option(help="The file to write.")] = Path(".env"),
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            "-y",
            help="Ask nothing: take the defaults and the variables "
            "named, replace an existing file; exit 2 if the key is missing or refused.",
        ),
    ] = False,
) -> None:
    """Write `.env` (mode 0600): the model provider and its key, checked with one cheap call,
    a generated HARNESS_API_KEY, and optional Telegram / Slack tokens."""
    interactive = not yes
    if (
        env_file.exists()
        and interactive
        and not typer.confirm(f"{env_file} exists; replace it?", default=False)
    ):
        typer.echo(f"left {env_file} as it was", err=True)
        raise typer.Exit(1)
    if provider is not None:
        chosen = provider.value
    else:
        chosen = _ask_provider() if interactive else "anthropic"
    key = _accepted_key(chosen, _key_from(api_key_env, chosen), interactive)
    channels = {
        "TELEGRAM_BOT_TOKEN": _optional_token(
            "Telegram bot token", telegram_token_env, interactive
        ),
        "SLACK_BOT_TOKEN": _optional_token("Slack bot token", slack_bot_token_env, interactive),
    }
    if channels["TELEGRAM_BOT_TOKEN"]:
        channels["TELEGRAM_MODE"] = "polling"  # works without a public URL
    if channels["SLACK_BOT_TOKEN"]:
        channels["SLACK_APP_TOKEN"] = _optional_token(
            "Slack app token (xapp-, Socket Mode)", slack_app_token_env, interactive
        )
    write_private(env_file, env_text(chosen, key, channels))
    written = ", ".join(["LLM_PROVIDER", key_variable(chosen), "HARNESS_API_KEY",
                         *(name for name, value in channels.items() if value)])  # fmt: skip
    typer.echo(f"wrote {env_file} (mode 600): {written}")
    typer.echo("next: `harness doctor`, then `harness up`")
