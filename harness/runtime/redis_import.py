"""Importing redis-py without its OpenTelemetry metrics SDK.

redis-py (6.x/7.x) imports `opentelemetry.sdk.metrics` when the module
`redis.observability.providers` loads, only to learn whether the SDK is installed: where it
is (the `otel` extra, for our traces), every process that imports `redis` pays ~30-50 ms for
a metrics SDK nothing here uses. We never turn on redis-py's metrics (our traces go through
`harness.observe.tracing`), so in our processes that one import is refused: redis-py then
takes the SDK for absent, as on an install without the extra. Any other import of the SDK,
before or after, is untouched.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importlib.abc imports importlib.resources: ~10 ms for a type
    from importlib.machinery import ModuleSpec
    from types import ModuleType

SDK_METRICS = "opentelemetry.sdk.metrics"
IMPORTER = "redis.observability.providers"


class RedisMetricsSdkRefused:
    """A meta path finder (PEP 451) that refuses `opentelemetry.sdk.metrics` while, and only
    while, redis-py's providers module is being executed; finds nothing otherwise (the next
    finder on `sys.meta_path` answers)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        """Raises `ModuleNotFoundError` for the SDK's metrics asked for by redis-py's
        providers module as it loads (it catches `ImportError`); None for anything else."""
        if fullname != SDK_METRICS:
            return None
        importer = sys.modules.get(IMPORTER)
        spec = getattr(importer, "__spec__", None)
        if not getattr(spec, "_initializing", False):
            return None
        raise ModuleNotFoundError(f"{SDK_METRICS} is not imported for redis-py", name=fullname)


def refuse_redis_metrics_sdk() -> None:
    """Make redis-py, when it is imported later in this process, load without the metrics
    SDK. Idempotent; does nothing when redis-py is already imported."""
    if "redis" in sys.modules:
        return
    if not any(isinstance(finder, RedisMetricsSdkRefused) for finder in sys.meta_path):
        sys.meta_path.insert(0, RedisMetricsSdkRefused())
