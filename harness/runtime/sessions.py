"""Which chat session a run belongs to, read from its triggering event.

The engine indexes, filters and traces runs by session (`run_index`, `bus`, `executor`); the
product's records (`harness.records.usage`) group usage by it too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def session_of(event: Mapping[str, Any]) -> str:
    """The chat session a run's triggering event belongs to, "" when none: a message's
    `data.session_key`, or a sub-agent task's `data.reply.session_key`. Never raises."""
    data = event.get("data")
    if not isinstance(data, dict):
        return ""
    key = data.get("session_key")
    if not key and isinstance(data.get("reply"), dict):
        key = data["reply"].get("session_key")
    return str(key or "")
