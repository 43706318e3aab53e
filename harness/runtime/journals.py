"""Journals a worker keeps for the runs it parked, so resuming one does not read its history.

When a run suspends, the worker that ran it keeps the run's journal with the journal's version
(every journal write bumps it, in the Lua scripts). When a worker claims a run it kept, it
sends that version, and the claim returns only the record written since (a wake-up writes one)
instead of every step the run recorded. Anything else gets the whole journal, as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

Journal = dict[str, dict[str, Any]]
JOURNALS_KEPT = 1024
RECORDS_KEPT = 50_000  # over all kept journals: a bound on the memory they hold


@dataclass(frozen=True)
class KeptJournal:
    """A run's journal as it stood at `version`."""

    version: int
    records: Journal


class JournalCache:
    """The journals of the last `size` runs this process parked, `records` records at most
    in all (the oldest are dropped first). Thread-safe."""

    def __init__(self, size: int = JOURNALS_KEPT, records: int = RECORDS_KEPT) -> None:
        self._size = size
        self._max_records = records
        self._records = 0
        self._items: OrderedDict[str, KeptJournal] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, run_id: str, version: int, records: Journal) -> None:
        """Keep `records` as the run's journal at `version`; the caller hands them over and
        must not change them afterwards."""
        with self._lock:
            self._drop(run_id)
            self._items[run_id] = KeptJournal(version, records)
            self._records += len(records)
            while self._items and (
                len(self._items) > self._size or self._records > self._max_records
            ):
                self._drop(next(iter(self._items)))

    def version(self, run_id: str) -> int:
        """The version kept for the run, or -1."""
        with self._lock:
            kept = self._items.get(run_id)
        return kept.version if kept is not None else -1

    def take(self, run_id: str) -> KeptJournal | None:
        """Remove and return what is kept for the run (the claimant now owns it)."""
        with self._lock:
            return self._drop(run_id)

    def _drop(self, run_id: str) -> KeptJournal | None:
        kept = self._items.pop(run_id, None)
        if kept is not None:
            self._records -= len(kept.records)
        return kept
