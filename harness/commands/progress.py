"""A spinner on stderr while the CLI waits on something that can take more than a second.

    with waiting("waiting for the agent's reply") as wait:
        reply = session.ask(text)
        wait.update("still waiting...")   # optional: change the text while it spins

Shown only when stderr is a terminal (rich's own test: `TERM=dumb`, a pipe or a file hide it)
and never when the caller asks for machine output (`hidden=True`, e.g. under `--json`), so
piped and JSON output stay exactly what they would be without it. The spinner is transient:
nothing of it is left on the screen once the block ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rich.console import Console
from rich.status import Status


@dataclass
class Waiting:
    """The handle `waiting` yields. `shown` says whether a spinner is on the screen (callers
    print their own progress marks otherwise); `update` changes its text (a no-op when not
    shown). Must not raise."""

    shown: bool
    _status: Status | None = field(default=None, repr=False)

    def update(self, message: str) -> None:
        """Show `message` next to the spinner from now on."""
        if self._status is not None:
            self._status.update(message)


def stderr_console() -> Console:
    """The console spinners draw on: stderr, so stdout carries only the command's output."""
    return Console(stderr=True)


@contextmanager
def waiting(
    message: str, *, hidden: bool = False, console: Console | None = None
) -> Iterator[Waiting]:
    """Spin with `message` on `console` (default: stderr) while the block runs, unless
    `hidden` or the console is not a terminal. Exceptions of the block pass through, after
    the spinner is cleared."""
    target = console if console is not None else stderr_console()
    if hidden or not target.is_terminal:
        yield Waiting(shown=False)
        return
    with target.status(message) as status:
        yield Waiting(shown=True, _status=status)
