"""Where each listener resumes: a small key-value store of cursors (Telegram's update offset).

`Cursors` is the contract, `RedisCursors` the Redis implementation, `MemoryCursors` its
in-memory twin."""

from __future__ import annotations

from typing import Protocol

import redis

from harness.runtime.bus_errors import redis_errors
from harness.runtime.keys import Keys


class Cursors(Protocol):
    """One string per listener name, kept without expiry. The Redis implementation raises
    `BusUnavailableError` when Redis fails."""

    def get(self, name: str) -> str | None:
        """The saved cursor of listener `name`, or None when none was saved."""
        ...

    def set(self, name: str, cursor: str) -> None:
        """Save the cursor of listener `name`, replacing the previous one."""
        ...


class RedisCursors:
    """`Cursors` as one Redis string per listener."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._redis = client
        self._keys = keys

    def get(self, name: str) -> str | None:
        """The saved cursor of listener `name`, or None when none was saved."""
        with redis_errors(f"read the cursor of {name}"):
            value = self._redis.get(self._keys.listener_cursor(name))
        return None if value is None else str(value)

    def set(self, name: str, cursor: str) -> None:
        """Save the cursor of listener `name`, replacing the previous one."""
        with redis_errors(f"save the cursor of {name}"):
            self._redis.set(self._keys.listener_cursor(name), cursor)


class MemoryCursors:
    """`Cursors` in one process's memory, for tests."""

    def __init__(self) -> None:
        self._cursors: dict[str, str] = {}

    def get(self, name: str) -> str | None:
        """See `Cursors.get`."""
        return self._cursors.get(name)

    def set(self, name: str, cursor: str) -> None:
        """See `Cursors.set`."""
        self._cursors[name] = cursor
