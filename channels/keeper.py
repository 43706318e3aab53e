"""The process's acknowledgement keeper: shows a person their message arrived off the turn's
thread, and repeats an acknowledgement that fades (Telegram's typing) while the turn is live.

A turn hands its acknowledgement over (`keep`) and goes on at once: the platform call is made
by one of a few sender threads, so a slow or failing platform never slows a turn or fails it.
A fading acknowledgement is repeated every `every` seconds for as long as the turn's `live()`
says (its run in the ledger, asked before each repeat), and never past its deadline. The
`every` is counted from the moment the previous call started, not from its answer, so a slow
platform stretches no gap: a channel can set it just under what one acknowledgement `lasts`.
A repeat the keeper takes more than `lasts` seconds after it was due (its senders fell behind:
the indicator has faded already) is skipped, not sent late: its key's next repeat is due at the
next `every` of its schedule, and a backlog sheds calls instead of growing with them. One keeper
per process (`process_keeper`): a turn that parks for its model call and resumes in another
process stays with the keeper that started it, and a key already kept here is never repeated
twice. Nothing is durable: a crash ends the repeats, which is all typing is worth.

    keeper = process_keeper()
    keeper.keep(run_id, send, every=4.0, live=lambda: run_is_live(run_id), for_s=600.0)
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

SENDERS = 4
"""Sender threads per process: the platform calls of a few hundred live turns, one every few
seconds each, while a slow call holds only its own thread."""


@dataclass
class _Kept:
    """A key whose acknowledgement is repeated: how to send it, how often, until when, and
    how long one lasts (None: a late repeat is still sent)."""

    send: Callable[[], None]
    every: float
    live: Callable[[], bool]
    until: float
    lasts: float | None = None
    busy: bool = False
    sent: bool = False


class AcknowledgementKeeper:
    """Sends acknowledgements on its own threads and repeats the fading ones (see the module).

    Thread-safe. With `threaded=False` nothing runs on its own: `run_due()` does the work due
    by `clock()` on the caller's thread, for tests that move a manual clock."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        threaded: bool = True,
        senders: int = SENDERS,
    ) -> None:
        self._clock = clock
        self._threaded = threaded
        self._senders = senders
        self._lock = threading.Condition()
        self._kept: dict[str, _Kept] = {}
        self._due: list[tuple[float, int, str | Callable[[], None]]] = []
        self._order = itertools.count()
        self._in_flight = 0
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def keep(
        self,
        key: str,
        send: Callable[[], None],
        *,
        every: float | None,
        live: Callable[[], bool],
        for_s: float,
        lasts: float | None = None,
    ) -> bool:
        """Call `send` once, soon, off this thread; with `every`, call it again every `every`
        seconds (from the start of the previous call) while `live()` is true (asked before
        each repeat; False or an exception ends the repeats), for at most `for_s` seconds. A
        repeat taken more than `lasts` seconds after it was due is skipped (see the module). A
        `key` repeated already is not repeated a second time: `send` is then called once only.
        Returns whether `key` is repeated from now on by this call. Never raises, never blocks
        on `send` or `live`."""
        now = self._clock()
        with self._lock:
            repeats = every is not None and key not in self._kept
            if repeats:
                assert every is not None
                self._kept[key] = _Kept(send, every, live, until=now + for_s, lasts=lasts)
                self._push(now, key)
            else:
                self._push(now, send)
            self._start()
            self._lock.notify_all()
        return repeats

    def kept(self) -> set[str]:
        """The keys whose acknowledgement is being repeated now."""
        with self._lock:
            return set(self._kept)

    def run_due(self) -> int:
        """Do, on this thread, every send and repeat due by now; return how many were done.
        For a keeper made with `threaded=False`."""
        done = 0
        while True:
            with self._lock:
                job = self._take(self._clock())
            if job is None:
                return done
            job()
            done += 1

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until nothing is due by now and no send is in flight; False after `timeout`
        seconds. For tests of a threaded keeper, which must not assert before it sent."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._in_flight or (self._due and self._due[0][0] <= self._clock()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.05))
        return True

    # -- the work -------------------------------------------------------------------------
    def _push(self, at: float, what: str | Callable[[], None]) -> None:
        heapq.heappush(self._due, (at, next(self._order), what))

    def _take(self, now: float) -> Callable[[], None] | None:
        """The next job due by `now`, its work counted in flight; None when none is due.
        Under the lock."""
        while self._due and self._due[0][0] <= now:
            due, _, what = heapq.heappop(self._due)
            if not isinstance(what, str):
                self._in_flight += 1
                return self._once(what)
            kept = self._kept.get(what)
            if kept is None or kept.busy:  # over, or its call in flight will schedule it
                continue
            kept.busy = True
            self._in_flight += 1
            return self._repeat(what, kept, due, first=not kept.sent)
        return None

    def _once(self, send: Callable[[], None]) -> Callable[[], None]:
        def job() -> None:
            try:
                _quietly(send)
            finally:
                self._done()

        return job

    def _repeat(self, key: str, kept: _Kept, due: float, *, first: bool) -> Callable[[], None]:
        def job() -> None:
            started = self._clock()
            go_on, next_due = False, started + kept.every
            try:
                late = started - due
                if not first and kept.lasts is not None and late > kept.lasts:
                    # faded long ago: showing it now is late anyway, and the call would add
                    # to the backlog that made it late; the schedule goes on from its next slot
                    missed = late // kept.every if kept.every > 0 else 0
                    go_on, next_due = True, due + kept.every * (missed + 1)
                # the first call shows the message arrived; each repeat asks the turn first
                elif first or _quietly(kept.live, default=False):
                    _quietly(kept.send)
                    go_on = True
            finally:
                self._after_repeat(key, kept, go_on, next_due)

        return job

    def _after_repeat(self, key: str, kept: _Kept, go_on: bool, due: float) -> None:
        with self._lock:
            kept.busy = False
            kept.sent = True
            if go_on and due <= kept.until:
                self._push(due, key)
            elif self._kept.get(key) is kept:
                del self._kept[key]
            self._in_flight -= 1
            self._lock.notify_all()

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1
            self._lock.notify_all()

    def _start(self) -> None:
        """Start the scheduling thread and the senders on first use. Under the lock. All are
        daemon threads: a stopping worker never waits for a platform call of theirs."""
        if not self._threaded or self._thread is not None:
            return
        for n in range(self._senders):
            name = f"acknowledge-send-{n}"
            threading.Thread(target=self._send_forever, name=name, daemon=True).start()
        self._thread = threading.Thread(target=self._schedule, name="acknowledge", daemon=True)
        self._thread.start()

    def _schedule(self) -> None:
        while True:
            with self._lock:
                job = self._take(self._clock())
                if job is None:
                    wait = self._due[0][0] - self._clock() if self._due else None
                    self._lock.wait(wait)
                    continue
            self._jobs.put(job)

    def _send_forever(self) -> None:
        while True:
            self._jobs.get()()


def _quietly(call: Callable[[], object], default: object = None) -> object:
    """`call()`, or `default` when it raised: an acknowledgement is cosmetic."""
    try:
        return call()
    except Exception:
        log.warning("acknowledgement failed", exc_info=True)
        return default


_process_keeper: AcknowledgementKeeper | None = None
_process_lock = threading.Lock()


def process_keeper() -> AcknowledgementKeeper:
    """This process's keeper, made on first use (its threads start at its first `keep`)."""
    global _process_keeper
    with _process_lock:
        if _process_keeper is None:
            _process_keeper = AcknowledgementKeeper()
        return _process_keeper
