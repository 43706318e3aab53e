"""Running the runtime without Celery: kicks are kept in memory and drained in this thread.

Like dramatiq's `StubBroker.join()`: deterministic, and exceptions surface in the test.
Used by the unit tests and by anyone testing their own functions.
"""

from __future__ import annotations

from harness.runtime.executor import advance
from harness.runtime.instance import Runtime
from harness.runtime.kicker import RecordingKicker
from harness.runtime.scheduler import reap_once


def drain(runtime: Runtime, *, max_kicks: int = 10_000) -> list[tuple[str, str]]:
    """Advance every pending kick, and the kicks those produce, until none is left.

    Also fires due timers (by the runtime's clock) after each round. Returns
    (run_id, outcome) for each kick. Raises `RuntimeError` when `max_kicks` is exceeded,
    which means something kicks itself forever.
    """
    kicker = runtime.kicker
    if not isinstance(kicker, RecordingKicker):
        raise TypeError("drain() needs a runtime whose kicker is a RecordingKicker")
    outcomes: list[tuple[str, str]] = []
    while True:
        while kicker.pending:
            run_id, _queue = kicker.pending.popleft()
            outcomes.append((run_id, advance(runtime, run_id)))
            if len(outcomes) > max_kicks:
                raise RuntimeError(f"more than {max_kicks} kicks: a run keeps kicking itself")
        reap_once(runtime, stale_ms=10**12)
        if not kicker.pending:
            return outcomes


class DrainingKicker(RecordingKicker):
    """Runs every kicked run to the end before `kick` returns (nested kicks join the drain),
    so a publish in a test returns with its runs finished. Set `runtime` after building it."""

    def __init__(self) -> None:
        super().__init__()
        self.runtime: Runtime | None = None
        self._draining = False

    def kick(self, run_id: str, queue: str) -> None:
        """Remember the kick, then drain unless a drain is already running."""
        super().kick(run_id, queue)
        if self.runtime is None or self._draining:
            return
        self._draining = True
        try:
            drain(self.runtime)
        finally:
            self._draining = False
