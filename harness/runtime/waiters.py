"""Which waiting runs an event wakes, without looking at the others.

A run in `step.wait_for_event(event=NAME, match=PATH)` waits in a bucket of NAME: `PATH=VALUE`
(the JSON of its own event's value at PATH) or `*` without a match. A publisher reads which
paths NAME's waiters use (a handful), computes the buckets its event falls in, and the publish
script wakes every run in those buckets. So a publish costs the same however many runs wait
for other values, and a match is JSON equality.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any

from harness.runtime.expressions import resolve_path

ANY = "*"


def bucket(match: str | None, value: Any) -> str:
    """The bucket of a waiter whose event's `match` path must equal `value` (`*` for none)."""
    if match is None:
        return ANY
    return f"{match}={json.dumps(value, sort_keys=True, separators=(',', ':'))}"


def buckets_for(paths: Iterable[str], event: dict[str, Any]) -> list[str]:
    """The buckets `event` (as a JSON-like dict) falls in, among waiters using `paths`."""
    return [
        ANY if path == ANY else bucket(path, resolve_path(f"event.{path}", event))
        for path in sorted(paths)
    ]


def legacy_matches(waiters: dict[str, str], event: dict[str, Any]) -> list[str]:
    """The runs among waiters recorded before waiters were indexed (run id -> JSON of match
    and value) that `event` wakes."""
    matched = []
    for run_id, waiter_json in waiters.items():
        waiter = json.loads(waiter_json)
        path = waiter.get("match")
        if path is None or resolve_path(f"event.{path}", event) == waiter.get("value"):
            matched.append(str(run_id))
    return matched


class KnownPaths:
    """The match paths each event name's waiters were last seen using, kept by a publishing
    process so it can compute an event's buckets without reading them first (the publish
    script tells it when a path is missing). A path no waiter uses any more only costs an
    empty bucket, so paths are never forgotten. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paths: dict[str, tuple[str, ...]] = {}

    def of(self, name: str) -> tuple[str, ...]:
        """The paths known for `name`'s waiters, sorted."""
        return self._paths.get(name, ())

    def learn(self, name: str, paths: Iterable[str]) -> None:
        """Add `paths` to those known for `name`."""
        with self._lock:
            self._paths[name] = tuple(sorted({*self._paths.get(name, ()), *paths}))
