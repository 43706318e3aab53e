"""The console's charts, as numbers: runs, failures and p95 turn latency per hour or day from
the run ledger, and tokens and cost per day from the usage records.

Runs are counted by the time they were created, within the retained history (the ledger
forgets runs after `RUN_RETENTION`, so an old bucket can read lower than it was). A "turn" is
a run of the message handler (`MESSAGE_HANDLER`): its latency is created to ended, so the
time a message waited for a worker counts. Usage is kept per UTC day only, so tokens and
cost are always per day whatever the runs' bucket.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from harness.events.event import MESSAGE_HANDLER
from harness.observe.run_filters import RunFilter, find_runs
from harness.observe.usage_report import UsageTotal, totals
from harness.records.stores import redis_records
from harness.runtime.instance import Runtime
from harness.runtime.ledger import RunRecord

Span = Literal["24h", "14d"]
SPANS: dict[Span, tuple[int, int]] = {"24h": (24, 3_600_000), "14d": (14, 86_400_000)}
"""Each span's bucket count and bucket width in ms."""
MAX_RUNS = 5000
"""Runs read for one chart page at most; past it the oldest buckets undercount."""


@dataclass(frozen=True)
class Bucket:
    """One hour or day: its label, runs created in it, how many of them failed, and the
    p95 latency (ms) of the turns that ended, or None when none did."""

    label: str
    runs: int
    failed: int
    p95_turn_ms: int | None


@dataclass(frozen=True)
class Trends:
    """Everything the charts page draws. `truncated`: more than `MAX_RUNS` runs in the span."""

    span: Span
    buckets: list[Bucket]
    usage: list[UsageTotal]
    truncated: bool


def p95(values: Sequence[int]) -> int | None:
    """The 95th percentile by the nearest-rank method, or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def bucket_runs(records: Sequence[RunRecord], start_ms: int, width_ms: int, count: int,
                label_format: str) -> list[Bucket]:  # fmt: skip
    """`records` counted into `count` buckets of `width_ms` from `start_ms` (UTC labels in
    `label_format`); records outside are left out."""
    runs, failed = [0] * count, [0] * count
    turns: list[list[int]] = [[] for _ in range(count)]
    for record in records:
        i = (record.created_at - start_ms) // width_ms
        if not 0 <= i < count:
            continue
        runs[i] += 1
        failed[i] += record.status == "failed"
        if record.function_id == MESSAGE_HANDLER and record.ended_at and record.created_at:
            turns[i].append(max(0, record.ended_at - record.created_at))
    return [
        Bucket(_label(start_ms + i * width_ms, label_format), runs[i], failed[i], p95(turns[i]))
        for i in range(count)
    ]


def _label(ms: int, label_format: str) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime(label_format)


def trends(runtime: Runtime, span: Span) -> Trends:
    """The charts of the last `span`: hourly buckets ending with this hour for `24h`, daily
    ones ending today for `14d` (UTC), and the usage of the last 14 days. Raises
    `BusUnavailableError` when Redis is down."""
    count, width = SPANS[span]
    now = runtime.now_ms()
    start = (now // width - count + 1) * width
    records = find_runs(runtime, RunFilter(since_ms=start), limit=MAX_RUNS + 1)
    buckets = bucket_runs(records[:MAX_RUNS], start, width, count,
                          "%H:00" if span == "24h" else "%m-%d")  # fmt: skip
    today = datetime.fromtimestamp(now / 1000, UTC).date()
    rows = redis_records(runtime).usage.rows(today - timedelta(days=13), today)
    by_day = {total.group: total for total in totals(rows, "day")}
    usage = [
        by_day.get(day, UsageTotal(group=day))
        for day in ((today - timedelta(days=13 - k)).isoformat() for k in range(14))
    ]
    return Trends(span, buckets, usage, truncated=len(records) > MAX_RUNS)
