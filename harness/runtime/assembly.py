"""The process-wide runtime: built once from `Settings`, with Celery pointed at the same Redis.

This is the one place that knows how the pieces are put together (the Redis client, the
Celery app and its `harness.kick` task, the knobs from settings). Nothing else in
`harness.runtime` imports it; worker, web and CLI entry points call `get_runtime()`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from harness.runtime.settings import EngineSettings, engine_settings

if TYPE_CHECKING:
    from redis.asyncio import BlockingConnectionPool
    from redis.asyncio import Redis as AsyncRedis

    from harness.runtime.instance import Runtime
    from harness.runtime.sentinel import SentinelTarget

_default: Runtime | None = None
_default_lock = threading.Lock()


def build_runtime(settings: EngineSettings) -> Runtime:
    """A runtime on the Redis `settings` name (through Sentinel when `REDIS_SENTINELS` is
    set), kicking through Celery on the same Redis.

    Points the Celery app at that broker, and its kick task at `get_runtime`. Connects
    lazily: building never touches the network. Raises `ConfigurationError` when no Redis
    is configured or running.
    """
    # Imported here, not at the top: every `harness` command names its builder through this
    # module (`use_builder`), and most never build a runtime (Redis client, Celery: ~0.3 s).
    import redis

    from harness.observe.tracing import tracer_from_env
    from harness.runtime.celery_app import CeleryKicker
    from harness.runtime.connection import resolve_redis_url
    from harness.runtime.instance import Runtime
    from harness.runtime.keys import Keys
    from harness.runtime.sentinel import sentinel_target

    sentinel = sentinel_target(settings)
    if sentinel is not None:
        url = ""  # the master's address comes from the Sentinels
        client = sentinel.sync_client()
        new_aclient: Callable[[], AsyncRedis] = functools.partial(
            sentinel.async_client, ASYNC_CONNECTIONS, ASYNC_WAIT_S
        )
        kicker = CeleryKicker(broker_factory=new_aclient)
    else:
        url = resolve_redis_url(settings)
        client = redis.Redis.from_url(
            url, decode_responses=True, health_check_interval=30, socket_connect_timeout=5
        )
        new_aclient = functools.partial(async_client, url)
        kicker = CeleryKicker(in_script=True)  # the broker is this same Redis
    _point_celery(sentinel, url)
    return Runtime(
        redis=client,
        kicker=kicker,
        aredis=new_aclient(),
        aredis_factory=new_aclient,
        keys=Keys(settings.harness_key_prefix),
        lease_ttl=settings.harness_lease_ttl,
        retry_backoff=settings.harness_retry_backoff,
        events_maxlen=settings.harness_events_maxlen,
        retention_s=settings.run_retention_days * 86_400,
        tracer=tracer_from_env(),
        wait_replicas=settings.redis_wait_replicas,
        wait_timeout_ms=settings.redis_wait_timeout_ms,
    )


def configure_broker(settings: EngineSettings) -> None:
    """Point the Celery app at the Redis `settings` name (through Sentinel when
    `REDIS_SENTINELS` is set), and its kick task at `get_runtime`, without building the
    runtime: what `celery -A harness.celery` needs at import. Touches no network. Raises
    `ConfigurationError` when no Redis is configured or running."""
    from harness.runtime.connection import resolve_redis_url
    from harness.runtime.sentinel import sentinel_target

    sentinel = sentinel_target(settings)
    _point_celery(sentinel, resolve_redis_url(settings) if sentinel is None else "")


def _point_celery(sentinel: SentinelTarget | None, url: str) -> None:
    """Celery's broker: the Sentinel-named master, else `url`."""
    from harness.runtime.celery_app import configure

    if sentinel is not None:
        configure(
            sentinel.broker_url(), runtime_provider=get_runtime,
            transport_options=sentinel.broker_options(), use_ssl=sentinel.broker_use_ssl(),
        )  # fmt: skip
    else:
        configure(url, runtime_provider=get_runtime)


ASYNC_CONNECTIONS = 64
ASYNC_WAIT_S = 10.0


def async_client(url: str) -> AsyncRedis:
    """An async client of the Redis at `url` on a pool of its own (`async_pool`), for one
    event loop. Touches no network."""
    from redis.asyncio import Redis as AsyncRedis

    return AsyncRedis(connection_pool=async_pool(url))


def async_pool(url: str) -> BlockingConnectionPool:
    """The async client's pool: at most `ASYNC_CONNECTIONS` connections, and a request beyond
    them waits for one (up to 10 s) instead of failing, so a burst of webhooks queues in the
    web process rather than answering 503."""
    from redis.asyncio import BlockingConnectionPool

    return BlockingConnectionPool.from_url(
        url, max_connections=ASYNC_CONNECTIONS, timeout=ASYNC_WAIT_S, decode_responses=True,
        health_check_interval=30,
    )  # fmt: skip


RuntimeBuilder = Callable[[], "Runtime"]
"""Builds a process's runtime from the process's settings: the engine's by default
(`build_runtime` on `engine_settings()`), or a product's that starts from it and adds what
the product needs (`harness.composition.fleet_runtime`)."""


def _engine_runtime() -> Runtime:
    return build_runtime(engine_settings())


_builder: RuntimeBuilder = _engine_runtime


def use_engine() -> None:
    """Make `get_runtime` build the engine's runtime alone again (`harness worker --engine`)."""
    use_builder(_engine_runtime)


def use_builder(builder: RuntimeBuilder) -> None:
    """Make `builder` what `get_runtime` builds the process-wide runtime with, from now on.

    The entry points of a product call this before anything asks for the runtime (the
    `harness` executable calls `harness.composition.use_fleet`); a process that never calls
    it runs the engine alone. A runtime already built or given (`set_runtime`) stays."""
    global _builder
    with _default_lock:
        _builder = builder


def get_runtime() -> Runtime:
    """The process-wide runtime, built by the builder in use (`use_builder`; the engine's
    `build_runtime` on `engine_settings()` by default) on first use. Thread-safe."""
    global _default
    with _default_lock:
        if _default is None:
            _default = _builder()
        return _default


def set_runtime(runtime: Runtime | None) -> None:
    """Replace the process-wide runtime (tests, embedding); None rebuilds it on next use."""
    global _default
    with _default_lock:
        _default = runtime
