"""Noticing that the operator changed the MCP config while a worker runs (issue 32: a server
added to the file was shown by `harness mcp list` while the worker, which had read the file
only at start, answered `unknown tool`).

The toolbox asks `poll()` whenever the tools are listed (before every model call); the file
is read at most every `RELOAD_INTERVAL` seconds and compared by content, so an edit is picked
up by the model call after it, give or take those seconds, and an untouched file costs one
small read per interval. Comparing content, not the modification time, sees an edit made
within the same clock tick and ignores a `touch`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from harness.errors import ConfigurationError
from harness.mcp.config import ServerConfig, parse_config, read_config_text

RELOAD_INTERVAL = 2.0
"""Seconds between two reads of the config file by one worker process."""

_MISSING, _UNREADABLE = "missing", "unreadable"  # digests of a file without content


class ConfigWatch:
    """One config file, read by `load()` and checked for changes by `poll()`. `clock`
    (seconds, monotonic) spaces the checks; tests pass one they can move forward. Not
    thread-safe: the toolbox calls it under its lock."""

    def __init__(
        self,
        path: Path,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval: float = RELOAD_INTERVAL,
    ) -> None:
        self.path = path
        self._environ = environ
        self._clock = clock
        self._interval = interval
        self._digest: str | None = None
        self._next_check = 0.0

    def load(self) -> list[ServerConfig]:
        """The servers in the file now (none when it does not exist). Raises
        `ConfigurationError` for a file that cannot be used; that content then counts as
        seen, so `poll()` reports only a later change."""
        self._next_check = self._clock() + self._interval
        self._digest = _UNREADABLE  # until the read succeeds
        text = read_config_text(self.path)
        self._digest = _digest(text)
        return parse_config(text, self.path, self._environ)

    def poll(self) -> list[ServerConfig] | None:
        """The servers when the file's content changed since it was last loaded or polled,
        else None (also when the last check was less than the interval ago). Raises
        `ConfigurationError` once for a changed file that cannot be used."""
        if self._clock() < self._next_check:
            return None
        before = self._digest
        self._next_check = self._clock() + self._interval
        try:
            text = read_config_text(self.path)
        except ConfigurationError:
            if before == _UNREADABLE:
                return None
            self._digest = _UNREADABLE
            raise
        digest = _digest(text)
        if digest == before:
            return None
        self._digest = digest
        return parse_config(text, self.path, self._environ)


def _digest(text: str | None) -> str:
    if text is None:
        return _MISSING
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
