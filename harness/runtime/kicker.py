"""Kicks: the messages that tell a worker "try to advance run X".

A kick carries nothing but a run id; Redis holds the truth. Losing a kick or delivering it
twice never matters: the scheduler re-kicks runs nobody claimed, and a claim refuses a run
that is already leased.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Protocol

KICK_TASK = "harness.kick"


class Kicker(Protocol):
    """Sends kicks. Implementations must not raise for a run they cannot kick right now:
    the scheduler will kick it again."""

    def kick(self, run_id: str, queue: str) -> None:
        """Ask some worker on `queue` to advance the run."""


class RecordingKicker:
    """Keeps kicks in memory, to run a runtime without Celery (see `harness.runtime.testing`)."""

    def __init__(self) -> None:
        self.pending: deque[tuple[str, str]] = deque()

    def kick(self, run_id: str, queue: str) -> None:
        """Remember the kick; `pending` holds them in order."""
        self.pending.append((run_id, queue))


def kick_all(kicker: Kicker, kicks: Iterable[tuple[str, str]]) -> None:
    """Send each (run_id, queue) kick."""
    for run_id, queue in kicks:
        kicker.kick(run_id, queue)
