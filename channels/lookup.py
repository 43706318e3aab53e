"""Platform look-ups that never block the webhook path.

A webhook must only verify, transform and publish: no platform call (Slack answers a slow
webhook with retries after 3 s). The few facts a transform wants from the platform (a Slack
user's display name, the bot's own @username on Telegram) are answered from a cache at once;
a miss starts one background fetch and the transform goes on without the value.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class BackgroundLookup:
    """A cache of `load(key)` results filled on daemon threads. Thread-safe; never raises.

    `get` returns the cached value (a stale one too, while it is refreshed) or None on a
    miss, and makes sure exactly one fetch per key is under way. Failed fetches are logged
    and retried on a later `get`.
    """

    def __init__(
        self,
        load: Callable[[str], str | None],
        *,
        ttl: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
        name: str = "lookup",
    ) -> None:
        self._load, self._ttl, self._clock, self._name = load, ttl, clock, name
        self._values: dict[str, tuple[float, str]] = {}
        self._running: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        """The value for `key` if known (fresh or stale), else None. Starts a fetch when the
        value is missing or stale. Does not wait for it."""
        with self._lock:
            entry = self._values.get(key)
            if (entry is None or entry[0] <= self._clock()) and key not in self._running:
                thread = threading.Thread(
                    target=self._fill, args=(key,), name=f"{self._name}-{key}", daemon=True
                )
                self._running[key] = thread
                thread.start()
        return entry[1] if entry is not None else None

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait for the fetches under way to finish (for tests and warm-up). True when idle."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                threads = list(self._running.values())
            if not threads:
                return True
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            if time.monotonic() >= deadline:
                with self._lock:
                    return not self._running

    def _fill(self, key: str) -> None:
        value: str | None = None
        try:
            value = self._load(key)
        except Exception as exc:  # a platform error must never surface on a daemon thread
            log.warning("%s for %s failed: %s: %s", self._name, key, type(exc).__name__, exc)
        with self._lock:
            self._running.pop(key, None)
            if value is not None:
                self._values[key] = (self._clock() + self._ttl, value)
