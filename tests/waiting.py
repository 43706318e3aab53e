"""Waiting on observable state in tests: the one `wait_until`, instead of sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def wait_until(
    check: Callable[[], T], what: str, *, timeout: float = 10.0, interval: float = 0.02
) -> T:
    """Poll `check` until it returns something truthy, and return that value.

    Fails the test with "timed out after <timeout>s waiting for <what> (last value: ...)"
    otherwise; `check` is called once more at the deadline, so a slow machine that gets
    there just in time passes. `what` should say what was expected, e.g. "the child to exit".
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what} (last value: {value!r})")
        time.sleep(interval)
