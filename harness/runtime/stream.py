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
    with redis_errors("read the events stream"):
        batches: Any = runtime.redis.xread({runtime.keys.events: cursor}, block=block_ms)
    events: list[dict[str, Any]] = []
    for _stream, entries in batches or []:
        for entry_id, fields in entries:
            cursor = str(entry_id)
            events.append(json.loads(fields["event"]))
    return cursor, events
