"""Which files the fleet's own code just wrote, told to whoever listens in this process.

The search index learns of a change to a file it searches from a file watcher, which is
asynchronous: a `write` tool call followed at once by a `search` could race the watcher's
thread. So the writers the fleet owns (`harness.workspace_files`, the daily log, the session
store) call `wrote(path)` once their bytes are in place, and the search's freshness tracker
(`harness.search.freshness`) marks that path to be read again before the next query. Other
processes' writes reach it through the watcher alone.

A listener runs in the writer's thread: it must be quick and must not raise (an exception is
logged and dropped, so a broken listener never fails a write).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

Listener = Callable[[Path], None]
_listeners: list[Listener] = []
_lock = threading.Lock()


def listen(listener: Listener) -> None:
    """Call `listener(path)` after each write of this process's own code. Idempotent."""
    with _lock:
        if listener not in _listeners:
            _listeners.append(listener)


def unlisten(listener: Listener) -> None:
    """Stop calling `listener`; nothing when it was not listening."""
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def wrote(path: Path) -> None:
    """Tell the listeners that the file at `path` (absolute) was written, replaced or removed.
    Never raises."""
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(path)
        except Exception:
            log.exception("a listener to file writes failed on %s", path)
