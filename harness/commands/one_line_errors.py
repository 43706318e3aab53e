"""The click group every `harness` command runs under, so that every failure a person can fix
is one line on stderr and a non-zero exit, never a traceback.

    error: cannot reach Redis (Error 111 connecting to 127.0.0.1:6379. Connection refused.)
    error: PORT: Input should be a valid integer ... (got 'abc'); e.g. PORT=8000
    error: no run starts with 'r12'

Exit codes are those of `exit_codes` (2 for a bad setting or argument, 3 for Redis down, 4 for
no such run, ...). Errors that are not ours still print a traceback: they are bugs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer import _click as click  # typer vendors its own click; its errors are these
from typer.core import TyperGroup

from harness.commands.exit_codes import INTERRUPTED, USAGE, exit_code_for
from harness.commands.help_style import tidy_help
from harness.errors import (
    BusUnavailableError,
    ConfigurationError,
    HarnessError,
    InvalidSettingsError,
)


def describe(exc: BaseException) -> tuple[list[str], int] | None:
    """The lines to print and the exit code for `exc`, or None when it is not an error a
    person can act on (a bug: let it show its traceback)."""
    if isinstance(exc, InvalidSettingsError):
        return list(exc.problems), USAGE
    if isinstance(exc, BusUnavailableError) and not isinstance(exc, ConfigurationError):
        hint = "is the fleet up (`harness up`) or REDIS_URL right?"
        return [f"cannot reach Redis: {exc}; {hint}"], exit_code_for(exc)
    if isinstance(exc, HarnessError):
        return [str(exc)], exit_code_for(exc)
    return None


def fail(lines: Sequence[str], code: int) -> typer.Exit:
    """Print each line as `error: ...` on stderr and return the `typer.Exit` to raise."""
    for line in lines:
        typer.echo(f"error: {line}", err=True)
    return typer.Exit(code=code)


class HarnessGroup(TyperGroup):
    """A `TyperGroup` that reports our errors, Redis errors and usage errors in one line each.
    Sub-groups (`runs`, `events`, `setup`) run inside its `invoke`, so they are covered too.
    Its help, and its sub-commands', goes through `tidy_help` however it is built (the
    executable, `python -m harness.cli`, typer's `CliRunner`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tidy_help(self)

    def invoke(self, ctx: click.core.Context) -> Any:
        """Run the command; an error `describe` knows becomes one line and its exit code."""
        try:
            return super().invoke(ctx)
        except Exception as exc:
            described = describe(exc)
            if described is None:
                raise
            raise fail(*described) from None

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Click's `main`, with a usage error printed as one line (`error: No such option:
        --x (see `harness up --help`)`) instead of a boxed panel."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.UsageError as exc:
            command = exc.ctx.command_path if exc.ctx else "harness"
            typer.echo(f"error: {exc.format_message()} (see `{command} --help`)", err=True)
            sys.exit(exc.exit_code)
        except click.exceptions.ClickException as exc:
            typer.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("aborted", err=True)
            sys.exit(INTERRUPTED)
        sys.exit(code if isinstance(code, int) else 0)
