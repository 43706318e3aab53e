"""Where each listener resumes: a small key-value store of cursors (Telegram's update offset)."""

from __future__ import annotations

import redis

from harness.runtime.bus_errors import redis_errors
from harness.runtime.keys import Keys


class Cursors:
    """One string per listener name, kept without expiry. Methods raise `BusUnavailableError`
    when Redis fails."""

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
