"""Keeping a non-essential process part alive: restart it with backoff instead of dying.

`harness up` runs channel listeners with this (`harness poll <channel> --restart`), so a
listener that cannot connect (bad token, platform down) never takes the fleet down with it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Backoff:
    """Delays between restarts: `initial` seconds, doubling up to `cap`; a run that lasted at
    least `stable_after` seconds resets the delay to `initial`."""

    initial: float = 1.0
    cap: float = 60.0
    stable_after: float = 60.0

    def delay(self, failures: int) -> float:
        """Seconds to wait after the `failures`-th failure in a row (1-based)."""
        return float(min(self.initial * 2.0 ** max(failures - 1, 0), self.cap))


def run_with_restarts(
    target: Callable[[], None],
    stop: threading.Event,
    name: str,
    *,
    backoff: Backoff | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Call `target` until `stop` is set, calling it again whenever it returns or raises an
    `Exception`, after a backoff delay (waited on `stop`, so setting it ends the wait). Each
    restart is one WARNING line naming `name`, the reason and the delay. `BaseException`s
    (KeyboardInterrupt, SystemExit) propagate. Returns how many times it restarted `target`."""
    backoff = backoff or Backoff()
    failures = restarts = 0
    while not stop.is_set():
        started = clock()
        try:
            target()
            reason = "returned"
        except Exception as exc:  # any failure of a non-essential part: restart it
            reason = f"{type(exc).__name__}: {exc}"
        if stop.is_set():
            break
        failures = 1 if clock() - started >= backoff.stable_after else failures + 1
        delay = backoff.delay(failures)
        log.warning("%s stopped (%s); restarting in %.0f s", name, reason, delay)
        if stop.wait(delay):
            break
        restarts += 1
    return restarts
