"""The exit codes of every `harness` command, one table (docs/cli.md prints it):

    0    ok
    1    failed: the thing asked for failed (a check, a run, a replay that differs, a timeout)
    2    usage: a bad argument, option or setting (fix the command line or `.env`)
    3    unreachable: Redis did not answer, or no fleet runs and REDIS_URL is unset
    4    not found: no such run, memory version, pairing code or subject
    5    refused: the fleet or a platform refused what was asked (not allowed here)
    130  interrupted (Ctrl-C)

`exit_code_for` maps our errors onto it; `one_line_errors.HarnessGroup` applies it to every
command, so the same failure exits with the same code whichever command met it.
"""

from __future__ import annotations

from typing import Final

from harness.errors import (
    BusUnavailableError,
    ConfigurationError,
    EventRefusedError,
    FunctionNotFoundError,
    InvalidEventError,
    InvokeRefusedError,
    RunNotFoundError,
)

OK: Final = 0
FAILED: Final = 1
USAGE: Final = 2
UNREACHABLE: Final = 3
NOT_FOUND: Final = 4
REFUSED: Final = 5
INTERRUPTED: Final = 130

TABLE: Final = (
    (OK, "ok", "the command did what was asked"),
    (FAILED, "failed", "what was asked failed: a check, a run, a differing replay, a timeout"),
    (USAGE, "usage", "a bad argument, option or setting: fix the command line or `.env`"),
    (
        UNREACHABLE,
        "unreachable",
        "the bus (Redis) did not answer: is the fleet up, REDIS_URL right?",
    ),
    (NOT_FOUND, "not found", "no such run, memory version, pairing code or subject"),
    (REFUSED, "refused", "the fleet or a platform refused what was asked"),
    (INTERRUPTED, "interrupted", "stopped with Ctrl-C"),
)


def exit_code_for(exc: BaseException) -> int:
    """The exit code for `exc` (one of our errors); FAILED for any error not named here."""
    if isinstance(exc, BusUnavailableError):
        return UNREACHABLE
    if isinstance(exc, ConfigurationError | InvalidEventError):
        return USAGE
    if isinstance(exc, RunNotFoundError | FunctionNotFoundError):
        return NOT_FOUND
    if isinstance(exc, EventRefusedError | InvokeRefusedError):
        return REFUSED
    return FAILED
