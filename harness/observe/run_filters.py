"""Which runs `harness runs` and the dashboard list: newest first, filtered by function,
session, status and start time.

A filter reads the run index of one of its fields (`harness.runtime.run_index`), the one
with the fewest runs, so it reads only runs that match that field however old they are;
the other fields are checked on the records read. `scan` bounds how many ids one listing
reads, for a combination of filters whose smallest index holds many runs matching it alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.runtime.instance import Runtime
from harness.runtime.ledger import RunRecord
from harness.runtime.sessions import session_of

SCAN = 20_000


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


def _index_key(runtime: Runtime, wanted: RunFilter) -> str:
    """The index to read: the smallest of those of the fields set; all runs when none is."""
    keys = runtime.keys
    candidates = [
        key
        for key, value in (
            (keys.runs_of_function(wanted.function), wanted.function),
            (keys.runs_of_session(wanted.session), wanted.session),
            (keys.runs_in_status(wanted.status), wanted.status),
        )
        if value
    ]
    if len(candidates) <= 1:
        return candidates[0] if candidates else keys.runs
    sizes = runtime.run_index.sizes(candidates)
    return min(zip(sizes, candidates, strict=True))[1]


def find_runs(
    runtime: Runtime, wanted: RunFilter, limit: int = 20, scan: int = SCAN
) -> list[RunRecord]:
    """Up to `limit` retained runs passing `wanted`, newest first, reading at most `scan`
    run ids. Raises `BusUnavailableError` when Redis is down."""
    index = _index_key(runtime, wanted)
    found: list[RunRecord] = []
    offset = 0
    page = max(limit, 50)
    while len(found) < limit and offset < scan:
        ids = runtime.run_index.newest(index, wanted.since_ms, offset, min(page, scan - offset))
        if not ids:
            break
        offset += len(ids)
        found += [r for r in runtime.run_index.records(ids) if wanted.matches(r)]
        page = min(page * 4, 2000)
    return found[:limit]
