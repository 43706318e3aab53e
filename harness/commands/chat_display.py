"""What `harness chat` shows while a reply is on its way: a status line, then the answer as it
is written, token by token.

On a terminal the status is a spinner until text arrives, and the text is redrawn as
Markdown as it grows, ending as the rendered reply. Elsewhere (a pipe, a log) each status is
one dim line and the text is printed raw as it comes; `finish(reply)` then prints the reply
as Markdown only if the streamed text was not exactly the reply.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape

from harness.agent.live_text import TextDeltas
from harness.agent.progress import WRITING, Progress


class ReplyDisplay:
    """One exchange on the console. Use as a context manager; not thread-safe."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._deltas = TextDeltas()
        self._labels: list[str] = []
        self._spinner: AbstractContextManager[Any] | None = None
        self._status: Any = None
        self._mid_line = False
        self._live: Live | None = None

    def __enter__(self) -> ReplyDisplay:
        if self._console.is_terminal:
            self._spinner = self._console.status("waiting for the agent…")
            self._status = self._spinner.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop_live()
        self._stop_spinner()

    def progress(self, update: Progress) -> None:
        """Show a status change or a piece of the answer."""
        if update.state == WRITING:
            piece, new = self._deltas.piece(update)
            self._write(piece, new)
            return
        label = f"{update.label}…"
        self._stop_live()
        if self._status is not None:
            self._status.update(escape(label))
        elif not self._labels or self._labels[-1] != label:
            self._labels.append(label)
            self._end_line()
            self._console.print(f"[dim]{escape(label)}[/dim]")

    def finish(self, response: str) -> None:
        """Print the reply, unless it was just streamed exactly as it is."""
        self._stop_spinner()
        if self._live is not None:
            self._live.update(Markdown(response))
            self._stop_live()
            return
        streamed = self._deltas.text.strip()
        self._end_line()
        if not streamed or streamed != response.strip():
            self._console.print(Markdown(response))

    def _write(self, piece: str, new: bool) -> None:
        self._stop_spinner()
        if self._console.is_terminal:
            if self._live is None:
                self._live = Live(console=self._console, refresh_per_second=8)
                self._live.start()
            self._live.update(Markdown(self._deltas.text))
            return
        if new:
            self._end_line()
        if piece:
            self._console.print(piece, end="", markup=False, highlight=False, soft_wrap=True)
            self._mid_line = True

    def _end_line(self) -> None:
        if self._mid_line:
            self._console.print()
            self._mid_line = False

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _stop_spinner(self) -> None:
        if self._spinner is not None:
            self._spinner.__exit__(None, None, None)
            self._spinner, self._status = None, None
