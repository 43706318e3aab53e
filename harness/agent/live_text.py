"""The answer as it is written: what a streaming think step passes on, and how often.

A think step hands every streamed piece of text to `LiveText.on_text`. The text so far goes
two ways, neither durable and neither allowed to slow the model down:

- to the session's progress channel (`progress.WRITING`, Redis pub/sub), coalesced to at most
  one message per `interval` seconds plus one when the step ends, for the terminal and
  `POST /api/chat`;
- to a `DraftSink`, the chat platform's draft writer (`channels.drafts`), on every piece: the
  sink keeps only the latest text and edits the platform message at its own pace.

A `deferred` live text (the model gateway's: one loop streams every call of its process) only
keeps each piece; `flush`, on the gateway's tick, shows what came since the last one and
hands back the message due, which the gateway publishes with the other calls' in one round
trip: a token costs an append, not a draft update, a wake of its writer and a publish.

Each message names the run's think step (counted from 1 in the turn) and the step's attempt,
so a retried step starts a fresh text instead of appending to the failed one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from harness.agent import progress
from harness.llm.provider import TextSink

log = logging.getLogger(__name__)

PUBLISH_EVERY_S = 0.05
"""Least time between two `writing` messages of one step on pub/sub."""


class DraftSink(Protocol):
    """Where the text so far is shown while a turn runs (a chat platform's draft message)."""

    def show(self, text: str) -> None:
        """Show `text` instead of whatever was shown. Must not block or raise."""
        ...


Publish = Callable[[progress.Progress], None]
"""Sends one progress message; must not raise (`progress.publish` bound to a session)."""


class LiveText:
    """The text of the current think step, passed on as it grows. One per turn; the step's
    thread calls `begin`, the returned sink, and `end`; `status` may come from any thread."""

    def __init__(
        self,
        run_id: str,
        *,
        publish: Publish | None = None,
        sink: DraftSink | None = None,
        interval: float = PUBLISH_EVERY_S,
        deferred: bool = False,
    ) -> None:
        self.run_id = run_id
        self._deferred = deferred
        self._pieces: list[str] = []  # deferred: taken, not passed on yet
        self._publish = publish
        self._sink = sink
        self._interval = interval
        self._lock = threading.Lock()
        self._text = ""
        self._step = 0
        self._attempt = 0
        self._published = ""
        self._last = 0.0

    def begin(self, step: int, attempt: int) -> TextSink:
        """Start the text of think step `step`, attempt `attempt`; returns the `on_text` to
        give the provider."""
        with self._lock:
            self._step, self._attempt, self._text, self._published = step, attempt, "", ""
            self._last = 0.0
            self._pieces.clear()
        return self.on_text

    def on_text(self, piece: str) -> None:
        """One streamed piece of the answer (deferred: kept for `flush`). Must not raise: a
        failing listener is logged."""
        with self._lock:
            if self._deferred:
                self._pieces.append(piece)
                return
            self._text += piece
        self._pass_on()

    def flush(self) -> progress.Progress | None:
        """Deferred: show the pieces taken since the last flush, and return the `writing`
        message due (the interval has passed), for the caller to publish with the other
        calls' in one round trip; None when none came or none is due. Must not raise."""
        with self._lock:
            if not self._pieces:
                return None
            self._text += "".join(self._pieces)
            self._pieces.clear()
        text, due = self._take()
        self._show(text)
        return self._sent(text) if due else None

    def _pass_on(self) -> None:
        """Show the text so far, and publish it when the interval has passed."""
        text, due = self._take()
        self._show(text)
        if due:
            self._send(text)

    def _take(self) -> tuple[str, bool]:
        with self._lock:
            return self._text, time.monotonic() - self._last >= self._interval

    def end(self) -> None:
        """The step finished or failed: pass on the pieces not yet passed on, and publish
        the text not yet published."""
        message = self.flush()
        if message is not None and self._publish is not None:
            self._publish(message)
        with self._lock:
            text, pending = self._text, self._text != self._published
        if pending:
            self._send(text)

    def status(self, line: str) -> None:
        """Show a short status line (Markdown, `tool_status.ToolStatus.markdown`) in the draft
        in place of the text."""
        self._show(line)

    def _show(self, text: str) -> None:
        if self._sink is None or not text.strip():
            return
        try:
            self._sink.show(text.strip())
        except Exception:
            log.exception("the draft of run %s could not take new text", self.run_id)

    def _send(self, text: str) -> None:
        message = self._sent(text)
        if self._publish is not None:
            self._publish(message)

    def _sent(self, text: str) -> progress.Progress:
        """`text` recorded as published now: its `writing` message."""
        with self._lock:
            self._published, self._last = text, time.monotonic()
            step, attempt = self._step, self._attempt
        return progress.Progress(
            run_id=self.run_id, state=progress.WRITING, text=text, step=step, attempt=attempt
        )


class TextDeltas:
    """Turns `writing` messages (each the whole text so far) back into the pieces to append,
    for readers that print text as it grows (the terminal, SSE `delta` events). One reader."""

    def __init__(self) -> None:
        self._key: tuple[str, int, int] | None = None
        self.text = ""

    def piece(self, update: progress.Progress) -> tuple[str, bool]:
        """The text to append for `update`, and True when it starts a new text (another think
        step or attempt, whose text replaces what was shown); ("", False) when nothing new."""
        key = (update.run_id, update.step, update.attempt)
        if key != self._key or not update.text.startswith(self.text):
            self._key, self.text = key, update.text
            return update.text, True
        piece, self.text = update.text[len(self.text) :], update.text
        return piece, False
