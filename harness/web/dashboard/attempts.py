"""How often one client address may fail to sign in to the dashboard.

Kept in this process's memory: each web process (`harness web --workers N`) counts on its
own, and a restart forgets, so an address gets at most N times the allowance per window.
Behind a reverse proxy the address is the proxy's unless uvicorn trusts its forwarded
headers (it does for a proxy on 127.0.0.1): then everyone behind it shares one allowance.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

MAX_FAILURES = 10
WINDOW_S = 15 * 60.0
MAX_ADDRESSES = 10_000
"""Addresses remembered at once; past it the longest quiet one is forgotten, so a flood of
addresses cannot grow the table without bound."""


class LoginAttempts:
    """Failed sign-ins per address within a sliding window of `window_s` seconds: after
    `max_failures` of them, `retry_after` says how long the address must wait. Not thread
    safe: the sign-in route runs on the event loop."""

    def __init__(
        self,
        max_failures: int = MAX_FAILURES,
        window_s: float = WINDOW_S,
        *,
        max_addresses: int = MAX_ADDRESSES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_failures, self._window_s = max_failures, window_s
        self._max_addresses, self._clock = max_addresses, clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, address: str) -> int | None:
        """Whole seconds until `address` may try again, or None when it may try now."""
        failures = self._recent(address)
        if len(failures) < self._max_failures:
            return None
        return max(1, math.ceil(failures[0] + self._window_s - self._clock()))

    def failed(self, address: str) -> None:
        """Count one failed sign-in from `address`."""
        failures = self._recent(address)
        failures.append(self._clock())
        self._failures[address] = failures
        self._failures.move_to_end(address)
        while len(self._failures) > self._max_addresses:
            self._failures.popitem(last=False)

    def succeeded(self, address: str) -> None:
        """Forget `address`'s failures: a person who got the key right starts afresh."""
        self._failures.pop(address, None)

    def _recent(self, address: str) -> deque[float]:
        failures = self._failures.get(address) or deque(maxlen=self._max_failures)
        cutoff = self._clock() - self._window_s
        while failures and failures[0] <= cutoff:
            failures.popleft()
        if not failures:
            self._failures.pop(address, None)
        return failures
