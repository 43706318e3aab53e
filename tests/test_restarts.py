"""run_with_restarts: a failing part is started again with backoff, one log line per restart."""

from __future__ import annotations

import logging
import threading

import pytest

from harness.fleet.restarts import Backoff, run_with_restarts

FAST = Backoff(initial=0.001, cap=0.004, stable_after=60.0)


def test_backoff_doubles_from_one_second_up_to_a_minute() -> None:
    delays = [Backoff().delay(n) for n in range(1, 9)]
    assert delays == [1, 2, 4, 8, 16, 32, 60, 60]


def test_a_failing_target_is_restarted_and_each_restart_is_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a target that fails three times, then asks to stop
    stop = threading.Event()
    calls: list[int] = []

    def target() -> None:
        calls.append(1)
        if len(calls) == 4:
            stop.set()
            return
        raise ConnectionError("closed port")

    # When it runs under restarts
    with caplog.at_level(logging.WARNING, logger="harness.fleet.restarts"):
        restarts = run_with_restarts(target, stop, "telegram listener", backoff=FAST)
    # Then it was started again after each failure, and each failure is one line
    assert (len(calls), restarts) == (4, 3)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert lines[0].startswith("telegram listener stopped (ConnectionError: closed port)")


def test_a_target_that_returns_is_restarted_too() -> None:
    stop = threading.Event()
    calls: list[int] = []

    def target() -> None:
        calls.append(1)
        if len(calls) == 2:
            stop.set()

    assert run_with_restarts(target, stop, "listener", backoff=FAST) == 1


def test_a_run_that_stayed_up_resets_the_delay(caplog: pytest.LogCaptureFixture) -> None:
    # Given a clock where the third run lasts longer than `stable_after`
    ticks = iter([0.0, 0.0, 10.0, 10.0, 20.0, 500.0, 500.0, 500.0])
    stop = threading.Event()
    calls: list[int] = []

    def target() -> None:
        calls.append(1)
        if len(calls) == 4:
            stop.set()
        raise OSError("down")

    # When it fails three times before being stopped
    backoff = Backoff(initial=0.001, cap=1.0, stable_after=100.0)
    with caplog.at_level(logging.WARNING, logger="harness.fleet.restarts"):
        run_with_restarts(target, stop, "listener", backoff=backoff, clock=lambda: next(ticks))
    # Then the delay doubled after the short run and went back to the first after the long one
    delays = [r.args[2] for r in caplog.records if isinstance(r.args, tuple)]
    assert delays == [0.001, 0.002, 0.001], delays


def test_keyboard_interrupt_is_not_swallowed() -> None:
    def target() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_with_restarts(target, threading.Event(), "listener", backoff=FAST)
