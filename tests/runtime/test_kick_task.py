"""The Celery kick task when Redis fails under it: one warning line, no traceback."""

from __future__ import annotations

import logging

import pytest

from harness.runtime import Runtime, celery_app
from tests.runtime_fixtures import UNREACHABLE_REDIS_PASSWORD


def test_kick_while_redis_is_down_logs_one_line_and_returns(
    unreachable_runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a worker whose Redis does not answer
    monkeypatch.setattr(celery_app, "_runtime_provider", lambda: unreachable_runtime)
    # When a kick arrives
    with caplog.at_level(logging.INFO):
        outcome = celery_app.kick("r-down", 3)
    # Then it ends with one warning naming the run, without a traceback or the password
    assert outcome == celery_app.REDIS_FAILED
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "r-down" in warnings[0].getMessage()
    assert warnings[0].exc_info is None
    assert UNREACHABLE_REDIS_PASSWORD not in caplog.text
