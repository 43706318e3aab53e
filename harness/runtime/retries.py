"""When a failed step or handler is tried again: the backoff, and the waits an error asks for.

A failure is retried after `backoff_seconds`, or after the `retry_after` the error carries when
that is longer (a rate limit's hint). An error with a `retry_for` budget (an overloaded server)
keeps being retried past the function's `retries` until that long after the first failure.
"""

from __future__ import annotations

import random

_MAX_BACKOFF_S = 300.0
_MAX_RETRY_AFTER_S = 3600.0


def backoff_seconds(base: float, failures: int) -> float:
    """Exponential backoff with 10% jitter: base, 2*base, 4*base, ... capped at five minutes."""
    delay = min(base * (2 ** max(failures - 1, 0)), _MAX_BACKOFF_S)
    return float(delay * random.uniform(0.9, 1.1))


def retry_after(exc: BaseException) -> float:
    """The wait an error asks for (`retry_after` seconds, as rate-limit errors carry), capped
    at an hour; 0 when it asks for none or for something that is not a number."""
    value = getattr(exc, "retry_after", None)
    try:
        return min(max(float(value), 0.0), _MAX_RETRY_AFTER_S) if value is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def within_retry_budget(exc: BaseException, first_failed_ms: int, now_ms: int) -> bool:
    """True when `exc` asks to be retried for a while (`retry_for` seconds) and that much
    time has not passed since the step first failed."""
    budget = getattr(exc, "retry_for", None)
    if not isinstance(budget, int | float) or budget <= 0:
        return False
    return now_ms - first_failed_ms < budget * 1000
