"""A value built on its first use rather than with its owner: what a process may never need
is not built, nor its imports loaded, until something asks for it (the runtime's Celery kicker,
`harness.runtime.kicker`; a model provider's blocking SDK client, `harness.llm`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    """The value `build` makes, built by the first `get` and then shared. Thread-safe: threads
    asking at once get the same value, and `build` runs once for it (again only if it raised,
    or after `take`)."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self) -> T:
        """The value, built now if it was not yet. Raises what `build` raises."""
        value = self._value
        if value is not None:
            return value
        with self._lock:
            if self._value is None:
                self._value = self._build()
            return self._value

    def built(self) -> T | None:
        """The value if it was built; builds nothing."""
        return self._value

    def take(self) -> T | None:
        """The value if it was built, forgotten here so that a later `get` builds a new one
        (how its owner closes it); None, and nothing built, if it was not."""
        with self._lock:
            value, self._value = self._value, None
        return value
