"""Per-day token totals in Redis, kept longer than the runs they came from.

`usage:{YYYY-MM-DD}` (hash, UTC days) maps `model|session|function|metric` to a count, where
metric is `in`, `out`, `cr`, `cw` (input, output, cache read, cache write tokens) or `calls`.
Each day's hash expires `usage_retention_s` after it was last written. Costs are not stored:
they are worked out when read, from the price table of the reader (`harness.observe.costs`),
so a corrected price corrects history too.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import redis
from pydantic import BaseModel

from harness.runtime.bus_errors import on_bus
from harness.runtime.keys import Keys

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


def session_of(event: dict[str, Any]) -> str:
    """The chat session a run's triggering event belongs to, "" when none: a message's
    `data.session_key`, or a sub-agent task's `data.reply.session_key`."""
    data = event.get("data")
    if not isinstance(data, dict):
        return ""
    key = data.get("session_key")
    if not key and isinstance(data.get("reply"), dict):
        key = data["reply"].get("session_key")
    return str(key or "")


def utc_day(ms: int) -> str:
    """The UTC day (`YYYY-MM-DD`) of `ms` since the epoch."""
    return datetime.fromtimestamp(ms / 1000, UTC).date().isoformat()


class UsageStore:
    """Adds and reads per-day usage totals. Thread-safe."""

    def __init__(self, client: redis.Redis, keys: Keys, retention_s: int) -> None:
        self.redis = client
        self.keys = keys
        self.retention_s = retention_s

    def _key(self, day: str) -> str:
        return f"{self.keys.prefix}:usage:{day}"

    @on_bus("record token usage")
    def add(self, now_ms: int, usage: dict[str, Any], *, session: str, function: str) -> None:
        """Add one model call's tokens (`{"model", "in", "out", "cr", "cw"}`) to today's
        totals, in one round trip. Raises `BusUnavailableError` when Redis is down."""
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
        """Every row from UTC day `first` to `last` inclusive, by day then model."""
        days = []
        day = first
        while day <= last:
            days.append(day.isoformat())
            day += timedelta(days=1)
        pipe = self.redis.pipeline(transaction=False)
        for name in days:
            pipe.hgetall(self._key(name))
        rows: list[UsageRow] = []
        for name, fields in zip(days, pipe.execute(), strict=True):
            grouped: dict[tuple[str, str, str], dict[str, int]] = {}
            for field, count in fields.items():
                model, session, function, metric = str(field).rsplit(_SEP, 3)
                grouped.setdefault((model, session, function), {})[metric] = int(count)
            for (model, session, function), m in sorted(grouped.items()):
                rows.append(
                    UsageRow(
                        day=name, model=model, session=session, function=function,
                        input_tokens=m.get("in", 0), output_tokens=m.get("out", 0),
                        cache_read_tokens=m.get("cr", 0), cache_write_tokens=m.get("cw", 0),
                        calls=m.get("calls", 0),
                    )
                )  # fmt: skip
        return rows
