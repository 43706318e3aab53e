"""redis-py imported without OpenTelemetry's metrics SDK (`harness.runtime.redis_import`):
the SDK, installed for our traces, is refused only to redis-py's look for it, so redis-py
works as on an install without it and anything else may still import the SDK."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fresh_imports import loaded_after

REFUSED_THEN_REDIS = (
    "from harness.runtime.redis_import import refuse_redis_metrics_sdk\n"
    "refuse_redis_metrics_sdk()\n"
    "import redis\n"
)


@pytest.fixture(autouse=True)
def _sdk_installed() -> None:
    pytest.importorskip("opentelemetry.sdk.metrics")


def test_redis_imported_after_the_refusal_loads_no_metrics_sdk(tmp_path: Path) -> None:
    # Given a fresh interpreter that refused the SDK to redis-py
    # When redis-py is imported
    loaded = loaded_after(REFUSED_THEN_REDIS, ("redis", "opentelemetry.sdk.metrics"), tmp_path)
    # Then it is, without the metrics SDK
    assert loaded == ["redis"], loaded


def test_redis_takes_the_metrics_sdk_for_absent_and_still_works(tmp_path: Path) -> None:
    # Given redis-py imported after the refusal
    code = (
        REFUSED_THEN_REDIS
        + "from redis.observability import providers\n"
        + "assert providers.OTEL_AVAILABLE is False, providers.OTEL_AVAILABLE\n"
        + "redis.Redis.from_url('redis://127.0.0.1:9/0')\n"
    )
    # When it is asked whether OpenTelemetry is there, and a client is made
    # Then it says no (as without the extra), and the client is made: no error is raised
    assert loaded_after(code, ("redis",), tmp_path) == ["redis"]


def test_the_metrics_sdk_may_still_be_imported_by_others(tmp_path: Path) -> None:
    # Given redis-py imported after the refusal
    # When something else imports the metrics SDK
    code = REFUSED_THEN_REDIS + "import opentelemetry.sdk.metrics\n"
    loaded = loaded_after(code, ("opentelemetry.sdk.metrics",), tmp_path)
    # Then it loads: only redis-py's own look was refused
    assert loaded == ["opentelemetry.sdk.metrics"], loaded


def test_without_the_refusal_redis_loads_the_metrics_sdk(tmp_path: Path) -> None:
    # Given a fresh interpreter that refused nothing (what the refusal saves: this test
    # fails once redis-py stops importing the SDK, and the refusal can go)
    loaded = loaded_after("import redis\n", ("opentelemetry.sdk.metrics",), tmp_path)
    assert loaded == ["opentelemetry.sdk.metrics"], loaded
