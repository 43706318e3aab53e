"""How many messages each person sent in the current minute: what `RATE_LIMIT_PER_MINUTE`
is checked against (`harness.agent.rate_gate`).

`RateWindows` is the contract, `RedisRateWindows` the Redis implementation (a fixed window:
`{prefix}:rate:{subject}:{minute}`, a counter that expires two minutes after its first
message), `MemoryRateWindows` its in-memory twin. A fixed window lets a burst of up to twice
the limit through across a minute's edge; for a polite "slow down" that is good enough, and
it costs one round trip.
"""

from __future__ import annotations

from typing import Protocol

import redis

from harness.runtime.bus_errors import on_bus
from harness.runtime.instance import Runtime
from harness.runtime.keys import Keys

WINDOW_MS = 60_000


class RateWindows(Protocol):
    """Counts messages per subject per minute. The Redis implementation raises
    `BusUnavailableError` when Redis fails."""

    def hit(self, subject: str, now_ms: int) -> int:
        """Count one message of `subject` at `now_ms`; how many it sent in that minute, this
        one included (atomic)."""
        ...


class RedisRateWindows:
    """`RateWindows` as one expiring counter per subject and minute. Thread-safe."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.redis = client
        self.keys = keys

    @on_bus("count a message for the rate limit")
    def hit(self, subject: str, now_ms: int) -> int:
        """See `RateWindows.hit`; one round trip."""
        key = f"{self.keys.prefix}:rate:{subject}:{now_ms // WINDOW_MS}"
        pipe = self.redis.pipeline(transaction=True)
        pipe.incr(key)
        pipe.pexpire(key, 2 * WINDOW_MS)
        count, _ = pipe.execute()
        return int(count)


class MemoryRateWindows:
    """`RateWindows` in one process's memory, for tests (old windows are never dropped)."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, int], int] = {}

    def hit(self, subject: str, now_ms: int) -> int:
        """See `RateWindows.hit`."""
        window = (subject, now_ms // WINDOW_MS)
        self._counts[window] = self._counts.get(window, 0) + 1
        return self._counts[window]


def rate_windows(runtime: Runtime) -> RedisRateWindows:
    """The per-minute message counters on `runtime`'s Redis."""
    return RedisRateWindows(runtime.redis, runtime.keys)
