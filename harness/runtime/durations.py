"""Durations written the way people write them: "500ms", "30s", "5m", "1h", "1d", "1h30m"."""

from __future__ import annotations

import math
import re
from datetime import timedelta

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(value: str | float | int | timedelta) -> float:
    """Return seconds for a duration string, a number of seconds or a timedelta.

    Raises `ValueError` with the accepted forms for anything else, or for a negative or
    infinite duration (digits past a float's range, "999…9d", read as infinity).
    """
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        parts = _PART.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise ValueError(
                f"cannot read duration {value!r}: use forms like '500ms', '30s', '5m', '1h', "
                "'1d' or '1h30m'"
            )
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    else:
        raise ValueError(f"cannot read duration {value!r}: give a string, seconds or a timedelta")
    if seconds < 0:
        raise ValueError(f"duration must not be negative, got {value!r}")
    if not math.isfinite(seconds):
        raise ValueError(f"duration {str(value)[:40]!r} is too long")
    return seconds


def wait_limit(value: str, most: str) -> str:
    """`value` when it is a duration more than 0 and at most `most` (both as people write
    them); raises `ValueError` saying which otherwise. For a tool's `timeout` argument."""
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise ValueError(f"not a duration: {value!r} (try 30s, {most})") from exc
    if not 0 < seconds <= parse_duration(most):
        raise ValueError(f"timeout {value!r} must be more than 0 and at most {most}")
    return value
