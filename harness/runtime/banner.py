"""How much a process says while it starts. `harness up` sets `QUIET_ENV=1` in the
environment of every process it starts (`harness up --verbose` does not); a process that
finds it says one line once it is up, and keeps the rest of its start-up to itself:

- Celery's start-up banner (its version, config, queues and task list: about 30 lines) is
  left out (`start_celery_worker`: a quiet worker);
- Celery's `SecurityWarning` about running as root (9 lines per worker) is filtered out
  (`hold_start_up_lines`): `harness up` says it once for the fleet instead;
- routine log records below WARNING are held back by `GATE`, a filter on the handler
  `configure_logging` installs, until the process says it is up (`say_up`); from then on
  they print as without the flag. Warnings and errors always print.

    hold_start_up_lines()                      # only with QUIET_ENV=1
    start_celery_worker(app, concurrency=4, queues=["harness"], loglevel="INFO")
    ...
    say_up(log, "worker ready: %d functions", count)

Workers start without Celery's command line: `app.worker_main` imports every `celery`
subcommand, the `amqp` one's REPL with them (click-repl, prompt_toolkit, pygments: about
13 MB held for the life of each worker and sidecar executor, for a prompt none of them
shows); `app.Worker(...).start()` is the same worker with the options given as keywords.
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Celery

QUIET_ENV = "HARNESS_QUIET_START"

ROOT_WARNING = (
    "running as root: Celery advises a non-root user for its workers (docs/deploy.md runs "
    "the fleet as one); `harness up --verbose` shows its warning"
)
"""What `harness up` says once, when quiet and root, in place of each worker's warning."""

_UP = "harness_up_line"  # the attribute `say_up` puts on its record: the gate lets it through
_START_UP = "harness_start_up_line"
START_UP_ONLY = {_START_UP: True}
"""`extra` for a routine line that belongs to the start-up even when it comes after the
process said it is up (a background registration): held back for good in a quiet start."""
_CELERY_ROOT_WARNING = r"You're running the worker with superuser privileges"
# Celery logs "<hostname> ready." right after the worker_ready signal our own line answers:
# that logger says nothing else at INFO, so its INFO is start-up only.
_CELERY_START_UP = frozenset({"celery.apps.worker"})


def quiet_start() -> bool:
    """True when this process was started quietly (`QUIET_ENV=1`: by `harness up` without
    `--verbose`)."""
    return os.environ.get(QUIET_ENV, "").strip() == "1"


def start_celery_worker(app: Celery, **options: Any) -> None:
    """Run a Celery worker of `app` in this thread until it stops, as `celery worker` with
    `options` (the command line's, as keywords: `concurrency`, `queues` as a list,
    `loglevel`, `hostname` (`%h` expanded), `without_gossip`, ...), without its banner when
    `quiet_start()`. What a handler of Celery's `worker_init` raises (a `SystemExit`) leaves
    here, as it leaves `app.worker_main`."""
    app.Worker(quiet=quiet_start(), **options).start()


class StartUpGate(logging.Filter):
    """Until armed, lets every record through. Once armed (`hold`), lets through records at
    WARNING and above, and `say_up`'s line, which opens it; once open, everything but the
    start-up-only lines (`START_UP_ONLY`, Celery's "ready."). A part that starts on its own
    beside the process (`hold_part`: the sidecar on a worker's thread) is held until its own
    `say_up`, whether or not the process said its line. Thread-safe enough: flags and sets
    that are only ever added to."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.opened = False
        self._parts: set[str] = set()
        self._opened_parts: set[str] = set()

    def hold(self) -> None:
        """Hold routine records back from now until `open`."""
        self.armed = True

    def open(self) -> None:
        """Let routine records through again. Idempotent."""
        self.opened = True

    def hold_part(self, prefix: str) -> None:
        """Hold the routine records of the loggers under `prefix` (a dotted name) until a
        `say_up` of one of them (`said_up`). Only matters once the gate is armed."""
        self._parts.add(prefix)

    def said_up(self, logger_name: str) -> None:
        """`say_up` was called on `logger_name`: open its part, or the gate when it is in
        none."""
        part = self._part(logger_name)
        if part is None:
            self.open()
        else:
            self._opened_parts.add(part)

    def _part(self, name: str) -> str | None:
        return next((p for p in self._parts if name == p or name.startswith(f"{p}.")), None)

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether `record` prints."""
        if not self.armed or record.levelno >= logging.WARNING or getattr(record, _UP, False):
            return True
        start_up_only = getattr(record, _START_UP, False) or (
            record.levelno == logging.INFO and record.name in _CELERY_START_UP
        )
        part = self._part(record.name) if self._parts else None
        opened = self.opened if part is None else part in self._opened_parts
        return opened and not start_up_only


GATE = StartUpGate()
"""The process's one gate, on the handler `configure_logging` installs (it keeps it when the
handlers are replaced later: Celery, the web app, set logging up again)."""


def hold_start_up_lines() -> None:
    """When this process was started quietly (`quiet_start`): hold its routine start-up
    records back (`GATE`) and filter Celery's `SecurityWarning` about root out. Else nothing.
    Call it once, before the start-up work."""
    if not quiet_start():
        return
    GATE.hold()
    # by its text: importing Celery's `SecurityWarning` class would load Celery in every
    # command that sets logging up
    warnings.filterwarnings("ignore", _CELERY_ROOT_WARNING)


def say_up(logger: logging.Logger, message: str, *args: object) -> None:
    """Log the process's one line saying it is up (INFO; it passes `GATE`), then let its
    routine records through again (only its part's, for a logger of a part held on its own:
    `StartUpGate.hold_part`). Safe to call more than once (each call logs)."""
    logger.info(message, *args, extra={_UP: True})
    GATE.said_up(logger.name)
