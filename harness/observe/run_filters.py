"""Which runs `harness runs` and the dashboard list: newest first, filtered by function,
session, status and start time. Filters are applied to the newest `scan` runs."""

from __future__ import annotations

from dataclasses import dataclass

from harness.runtime.instance import Runtime
from harness.runtime.ledger import RunRecord
from harness.runtime.usage_store import session_of

SCAN = 2000


@dataclass(frozen=True)
class RunFilter:
    """Empty fields match everything; `since_ms` is a creation time lower bound (0: none)."""

    function: str = ""
    session: str = ""
    status: str = ""
    since_ms: int = 0

    def matches(self, record: RunRecord) -> bool:
        """True when `record` passes every filter that is set."""
        return (
            (not self.function or record.function_id == self.function)
            and (not self.session or session_of(record.event) == self.session)
            and (not self.status or record.status == self.status)
            and record.created_at >= self.since_ms
        )


def find_runs(runtime: Runtime, wanted: RunFilter, limit: int = 20) -> list[RunRecord]:
    """Up to `limit` retained runs passing `wanted`, newest first. Raises
    `BusUnavailableError` when Redis is down."""
    if wanted == RunFilter():
        return runtime.ledger.recent(limit)
    found = [r for r in runtime.ledger.recent(SCAN) if wanted.matches(r)]
    return found[:limit]
