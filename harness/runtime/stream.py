"""Reading the capped events stream that every accepted event is appended to."""

from __future__ import annotations

import json
from typing import Any

from harness.runtime.bus_errors import redis_errors
from harness.runtime.instance import Runtime


def latest_cursor(runtime: Runtime) -> str:
    """A cursor at the newest entry, so a read after it sees only later events. Raises
    `BusUnavailableError` when Redis fails."""
    with redis_errors("read the events stream"):
        last: Any = runtime.redis.xrevrange(runtime.keys.events, count=1)
    return str(last[0][0]) if last else "0-0"


def read_events(
    runtime: Runtime, cursor: str, block_ms: int = 5000
) -> tuple[str, list[dict[str, Any]]]:
    """Events after `cursor`, waiting up to `block_ms` for one. Returns (new cursor, events).
    Raises `BusUnavailableError` when Redis fails."""
    entries = read_entries(runtime, cursor, block_ms)
    return (entries[-1][0] if entries else cursor), [event for _id, event in entries]


def read_entries(runtime: Runtime, cursor: str, block_ms: int) -> list[tuple[str, dict[str, Any]]]:
    """(stream id, event) of each event after `cursor`, oldest first, waiting up to
    `block_ms` (at least 1: 0 would be "forever") for one. Raises `BusUnavailableError` when
    Redis fails."""
    with redis_errors("read the events stream"):
        batches: Any = runtime.redis.xread({runtime.keys.events: cursor}, block=max(1, block_ms))
    return [
        (str(entry_id), json.loads(fields["event"]))
        for _stream, entries in batches or []
        for entry_id, fields in entries
    ]


def stream_id(entry_id: str) -> tuple[int, int]:
    """A stream id ("1700000000000-3") as a pair that orders like the stream does."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)
