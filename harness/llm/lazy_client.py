"""An SDK's blocking client, built when a call first needs it rather than with its provider.

A worker on the model gateway's path only renders requests (`PreparedModelProvider.prepare`);
the gateway makes the calls. Building the client with the provider would import the SDK
(tens of MB a process) into every worker for a client it never uses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


class _Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class LazyClient(Generic[C]):
    """The client `build` makes, built on the first `get` and then shared. Thread-safe: two
    threads asking at once get the same client; `build` never runs twice for one client."""

    def __init__(self, build: Callable[[], C]) -> None:
        self._build = build
        self._client: C | None = None
        self._lock = threading.Lock()

    def get(self) -> C:
        """The client, built now if there is none. Raises what `build` raises."""
        client = self._client
        if client is not None:
            return client
        with self._lock:
            if self._client is None:
                self._client = self._build()
            return self._client

    def close(self) -> None:
        """Close the client if one was built (none is built to be closed); a later `get`
        builds a new one. Idempotent."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
