"""`LoginAttempts`: failed sign-ins per address in a sliding window, in a bounded table."""

from __future__ import annotations

from harness.web.dashboard.attempts import LoginAttempts
from tests.runtime_fixtures import ManualClock


def test_login_attempts_refuse_an_address_until_its_oldest_failure_leaves_the_window() -> None:
    # Given three allowed failures per 60 s, and an address that failed at 0, 10 and 20 s
    clock = ManualClock(0.0)
    attempts = LoginAttempts(3, 60.0, clock=clock)
    for _ in range(3):
        attempts.failed("198.51.100.7")
        clock.advance(10)
    # When it asks at 30 s, and again once the first failure is 60 s old
    waiting = attempts.retry_after("198.51.100.7")
    clock.advance(30)
    later = attempts.retry_after("198.51.100.7")
    # Then it waits 30 s, then may try again; another address was never held back
    assert waiting == 30 and later is None
    assert attempts.retry_after("198.51.100.8") is None


def test_login_attempts_forget_an_address_that_signs_in() -> None:
    # Given an address one failure short of being held back
    attempts = LoginAttempts(2, 60.0, clock=ManualClock(0.0))
    attempts.failed("198.51.100.7")
    # When it signs in, then fails once more
    attempts.succeeded("198.51.100.7")
    attempts.failed("198.51.100.7")
    # Then it is not held back: the earlier failure was forgotten
    assert attempts.retry_after("198.51.100.7") is None


def test_login_attempts_remember_at_most_max_addresses() -> None:
    # Given a table of two addresses, each held back after one failure
    attempts = LoginAttempts(1, 60.0, max_addresses=2, clock=ManualClock(0.0))
    # When three addresses fail
    for address in ("a", "b", "c"):
        attempts.failed(address)
    # Then the longest quiet one is forgotten, the other two are still held back
    assert attempts.retry_after("a") is None
    assert attempts.retry_after("b") is not None and attempts.retry_after("c") is not None
