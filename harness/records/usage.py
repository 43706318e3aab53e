"""Per-day token totals, kept longer than the runs they came from.

`UsageStore` is the contract, `RedisUsageStore` the Redis implementation, `MemoryUsageStore`
its in-memory twin; `UsageRecorder` is the step observer (`harness.runtime.step_observers`)
that adds each model call's tokens, plugged into the fleet's runtime by
`harness.composition.extend_runtime`.

In Redis, `{prefix}:usage:{YYYY-MM-DD}` (hash, UTC days) maps `model|session|function|metric`
to a count, where metric is `in`, `out`, `cr`, `cw` (input, output, cache read, cache write
tokens) or `calls`. Each day's hash expires `retention_s` after it was last written
(`USAGE_RETENTION_DAYS`). Costs are not stored: they are worked out when read, from the price
table of the reader (`harness.observe.usage_report`), so a corrected price corrects history.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any, Protocol

import redis
from pydantic import BaseModel

from harness.runtime.bus_errors import on_bus
from harness.runtime.instance import Runtime
from harness.runtime.keys import Keys
from harness.runtime.sessions import session_of
from harness.runtime.step_observers import CommittedStep

DEFAULT_RETENTION_S = 90 * 86_400
"""How long a day's totals are kept after their last write when nothing says otherwise."""

_METRICS = ("in", "out", "cr", "cw", "calls")
_SEP = "|"


class UsageRow(BaseModel, frozen=True):
    """Tokens one model used for one session and function on one UTC day."""

    day: str
    model: str
    session: str = ""
    function: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    calls: int = 0


def utc_day(ms: int) -> str:
    """The UTC day (`YYYY-MM-DD`) of `ms` since the epoch."""
    return datetime.fromtimestamp(ms / 1000, UTC).date().isoformat()


class UsageStore(Protocol):
    """Adds and reads per-day usage totals. The Redis implementation raises
    `BusUnavailableError` when Redis fails."""

    def add(self, now_ms: int, usage: Mapping[str, Any], *, session: str, function: str) -> None:
        """Add one model call's tokens (`{"model", "in", "out", "cr", "cw"}`, missing counts
        are 0) and one call to the totals of the UTC day of `now_ms`."""
        ...

    def rows(self, first: date, last: date) -> list[UsageRow]:
        """Every row from UTC day `first` to `last` inclusive, by day, then model, session
        and function."""
        ...


def _days(first: date, last: date) -> Iterator[str]:
    day = first
    while day <= last:
        yield day.isoformat()
        day += timedelta(days=1)


def _row(day: str, group: tuple[str, str, str], counts: Mapping[str, int]) -> UsageRow:
    model, session, function = group
    return UsageRow(
        day=day, model=model, session=session, function=function,
        input_tokens=counts.get("in", 0), output_tokens=counts.get("out", 0),
        cache_read_tokens=counts.get("cr", 0), cache_write_tokens=counts.get("cw", 0),
        calls=counts.get("calls", 0),
    )  # fmt: skip


class RedisUsageStore:
    """`UsageStore` as one Redis hash per UTC day. Thread-safe."""

    def __init__(
        self, client: redis.Redis, keys: Keys, retention_s: int = DEFAULT_RETENTION_S
    ) -> None:
        self.redis = client
        self.keys = keys
        self.retention_s = retention_s

    def _key(self, day: str) -> str:
        return f"{self.keys.prefix}:usage:{day}"

    @on_bus("record token usage")
    def add(self, now_ms: int, usage: Mapping[str, Any], *, session: str, function: str) -> None:
        """See `UsageStore.add`; one round trip, and the day's hash expires `retention_s`
        from now."""
        key = self._key(utc_day(now_ms))
        base = _SEP.join(p.replace(_SEP, "/") for p in (usage["model"], session, function))
        pipe = self.redis.pipeline(transaction=False)
        for metric in _METRICS[:4]:
            if usage.get(metric):
                pipe.hincrby(key, f"{base}{_SEP}{metric}", int(usage[metric]))
        pipe.hincrby(key, f"{base}{_SEP}calls", 1)
        pipe.expire(key, self.retention_s)
        pipe.execute()

    @on_bus("read token usage")
    def rows(self, first: date, last: date) -> list[UsageRow]:
        """See `UsageStore.rows`."""
        days = list(_days(first, last))
        pipe = self.redis.pipeline(transaction=False)
        for name in days:
            pipe.hgetall(self._key(name))
        rows: list[UsageRow] = []
        for name, fields in zip(days, pipe.execute(), strict=True):
            grouped: dict[tuple[str, str, str], dict[str, int]] = {}
            for field, count in fields.items():
                model, session, function, metric = str(field).rsplit(_SEP, 3)
                grouped.setdefault((model, session, function), {})[metric] = int(count)
            rows.extend(_row(name, group, counts) for group, counts in sorted(grouped.items()))
        return rows


class MemoryUsageStore:
    """`UsageStore` in one process's memory, for tests. Keeps everything (no expiry)."""

    def __init__(self) -> None:
        self._days: dict[str, dict[tuple[str, str, str], dict[str, int]]] = {}

    def add(self, now_ms: int, usage: Mapping[str, Any], *, session: str, function: str) -> None:
        """See `UsageStore.add`."""
        group = (str(usage["model"]), session, function)
        counts = self._days.setdefault(utc_day(now_ms), {}).setdefault(group, {})
        for metric in _METRICS[:4]:
            if usage.get(metric):
                counts[metric] = counts.get(metric, 0) + int(usage[metric])
        counts["calls"] = counts.get("calls", 0) + 1

    def rows(self, first: date, last: date) -> list[UsageRow]:
        """See `UsageStore.rows`."""
        return [
            _row(day, group, counts)
            for day in _days(first, last)
            for group, counts in sorted(self._days.get(day, {}).items())
        ]


class UsageRecorder:
    """The step observer that adds each model call's tokens to `store`: session from the run's
    triggering event (`session_of`), function = the run's function id, day = when the step
    ended. A step that was no model call adds nothing. Raises what `store.add` raises (the
    engine logs it and the step goes on)."""

    def __init__(self, store: UsageStore) -> None:
        self.store = store

    def step_committed(self, step: CommittedStep) -> None:
        """See `harness.runtime.step_observers.StepObserver`."""
        if step.usage is None:
            return
        self.store.add(
            step.ended_ms, step.usage, session=session_of(step.event), function=step.function_id
        )


def usage_store(runtime: Runtime, retention_s: int = DEFAULT_RETENTION_S) -> RedisUsageStore:
    """The usage totals on `runtime`'s Redis: what readers (`harness usage`, the dashboard)
    read, and what the fleet's `UsageRecorder` writes to."""
    return RedisUsageStore(runtime.redis, runtime.keys, retention_s)
