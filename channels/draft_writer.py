"""The draft of one turn on its chat platform, drawn by a background thread at the platform's pace.

`show(text)` only stores the latest text and returns: the model's stream never waits on the
platform. Where the platform offers an ephemeral preview for the chat (`preview_draft`), the
thread shows the latest text there, refreshing it every `PREVIEW_REFRESH_S` while nothing new
comes (a Telegram preview fades after about 30 s); else it posts the draft once (or, after a
retry or a restart, finds the one the run already posted in its `DraftLog`) and edits it.
Either way at most once per `draft_interval` seconds, skipping the texts that came in
between, and the first time one interval after the first text: an answer (or a tool's status
line) that is whole within that interval is never drawn, only delivered, so a short reply
costs no platform call, no record read and no flash of a draft the reply replaces at once.
A 429 pushes the next write back by its `retry_after`; any other platform error stops the
drafting for this turn (the final reply is still delivered by `send-reply`).

    writer = DraftWriter(channel, destination, meta, DraftLog(runtime, run_id))
    writer.show("Hello, wor")
    writer.close()              # before the reply is published: no edit lands after it
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from channels.drafts import DraftingChannel, DraftLog
from channels.errors import PlatformError, RateLimited
from harness.errors import BusUnavailableError
from harness.events import Destination

log = logging.getLogger(__name__)

INTERRUPTED_NOTE = "\n\n_(interrupted)_"
PREVIEW_REFRESH_S = 20.0
"""How long an unchanged preview is left before it is shown again."""
CLOSE_WAIT_S = 15.0
"""How long `close` waits for an edit in flight (a platform call times out after 10 s)."""


class DraftWriter:
    """One turn's draft message. Thread-safe; `close` ends it and must be called."""

    def __init__(
        self,
        channel: DraftingChannel,
        destination: Destination,
        channel_meta: Mapping[str, Any],
        drafts: DraftLog,
    ) -> None:
        self._channel = channel
        self._destination = destination
        self._meta = channel_meta
        self._drafts = drafts
        self._every = channel.draft_interval(destination)
        self._cond = threading.Condition()
        self._latest = ""
        self._shown = ""
        self._closing = False
        self._message_id: str | None = None
        self._previewing = True
        self._not_before = 0.0
        # started by the first text: a turn whose text is drawn elsewhere (its model call is
        # offloaded to the gateway, which draws it) starts no thread and reads no record
        self._thread = threading.Thread(target=self._run, name="draft-writer", daemon=True)

    @property
    def message_id(self) -> str | None:
        """The draft's platform id once posted (or found), else None."""
        return self._message_id

    def show(self, text: str) -> None:
        """Make `text` the next content of the draft. Never blocks on the platform; must not
        raise."""
        with self._cond:
            self._latest = text
            if self._closing:
                return
            if self._thread.ident is None:
                self._not_before = time.monotonic() + self._every  # the first draw waits
                self._thread.start()
            self._cond.notify_all()

    def close(self, *, interrupted: bool = False) -> None:
        """Stop drafting; after it returns no edit of ours is in flight (unless the platform
        hangs past `CLOSE_WAIT_S`). With `interrupted`, the draft is left marked as cut short.
        Idempotent; must not raise."""
        with self._cond:
            closed, self._closing = self._closing, True
            self._cond.notify_all()
        if closed or self._thread.ident is None:  # closed before, or never drew anything
            return
        self._thread.join(CLOSE_WAIT_S)
        if interrupted and self._shown and (self._previewing or self._message_id is not None):
            self._mark_interrupted()

    def _mark_interrupted(self) -> None:
        """Show the draft as cut short, as soon as the platform takes it: waits out the
        platform's pace (or a 429's `retry_after`), twice at most, within `CLOSE_WAIT_S`."""
        text = self._shown + INTERRUPTED_NOTE
        deadline = time.monotonic() + CLOSE_WAIT_S
        for _ in range(2):
            wait = self._not_before - time.monotonic()
            if wait > 0 and time.monotonic() + wait > deadline:
                break
            if wait > 0:
                time.sleep(wait)
            if not self._write(text) or self._shown == text:
                return
        log.warning("the interrupted draft could not be marked: the platform kept refusing")

    # -- the thread --------------------------------------------------------------------
    def _run(self) -> None:
        with self._cond:
            self._wait_turn()
            if self._closing:  # whole within the first interval: delivered, never drawn
                return
        try:
            self._message_id = self._drafts.message_id()
        except BusUnavailableError:
            log.warning("draft not started: the run's draft record is unreachable")
            return
        self._previewing = self._message_id is None
        while True:
            with self._cond:
                changed = self._cond.wait_for(
                    lambda: self._closing or self._latest != self._shown,
                    timeout=PREVIEW_REFRESH_S if self._previewing and self._shown else None,
                )
                self._wait_turn()
                if self._closing:
                    return
                text = self._latest if changed else self._shown
            if not self._write(text):
                return

    def _wait_turn(self) -> None:
        """Wait, holding `_cond`, until the platform takes the next write or the draft closes."""
        while not self._closing and (wait := self._not_before - time.monotonic()) > 0:
            self._cond.wait(wait)

    def _write(self, text: str) -> bool:
        """Preview, post or edit the draft to `text`; False when drafting should stop."""
        try:
            if self._previewing:
                self._previewing = self._channel.preview_draft(
                    self._drafts.key, text, self._destination, self._meta
                )
            if not self._previewing:
                self._post_or_edit(text)
        except RateLimited as exc:
            log.info("draft edit rate limited; next one in %s s", exc.retry_after)
            self._not_before = time.monotonic() + exc.retry_after
            self._hold(exc.retry_after)
            return True
        except (PlatformError, BusUnavailableError) as exc:
            log.warning("drafting stopped: %s", exc)
            return False
        except Exception:
            log.exception("drafting stopped by an unexpected error")
            return False
        self._shown = text
        self._not_before = time.monotonic() + self._every
        return True

    def _post_or_edit(self, text: str) -> None:
        if self._message_id is None:
            message_id = self._channel.post_draft(text, self._destination, self._meta)
            self._message_id = message_id
            self._drafts.record(message_id)
        else:
            self._channel.edit_draft(self._message_id, text, self._destination, self._meta)
        self._hold(self._every)

    def _hold(self, seconds: float) -> None:
        """Tell the final delivery when the platform takes the next edit of the message."""
        if self._message_id is not None:
            self._drafts.hold(seconds)
