"""The runtime object: the Redis client, the ledger, the kicker and the knobs, passed around
explicitly so that tests can build one on fakeredis and a clock of their own."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import redis

from harness.runtime.functions import REGISTRY, FunctionRegistry
from harness.runtime.keys import Keys
from harness.runtime.kicker import Kicker
from harness.runtime.ledger import Ledger
from harness.runtime.triggers import TriggerTable

_default: Runtime | None = None
_default_lock = threading.Lock()


@dataclass
class Runtime:
    """Everything a publisher, worker or scheduler needs. Cheap to share across threads."""

    redis: redis.Redis
    kicker: Kicker
    registry: FunctionRegistry = field(default_factory=lambda: REGISTRY)
    keys: Keys = field(default_factory=Keys)
    lease_ttl: float = 10.0
    retry_backoff: float = 1.0
    events_maxlen: int = 10_000
    dedupe_ttl_s: int = 86_400
    retention_s: int = 7 * 86_400
    clock: Callable[[], float] = time.time
    worker_id: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    ledger: Ledger = field(init=False)
    triggers: TriggerTable = field(init=False)

    def __post_init__(self) -> None:
        self.ledger = Ledger(self.redis, self.keys)
        self.triggers = TriggerTable(self.redis, self.keys)

    def now_ms(self) -> int:
        """Milliseconds since the epoch by this runtime's clock."""
        return int(self.clock() * 1000)

    def new_owner(self) -> str:
        """A lease owner name unique to one execution attempt."""
        return f"{self.worker_id}:{uuid.uuid4().hex[:8]}"

    def register_functions(self) -> int:
        """Write the specs of every function in this process's registry to the trigger table."""
        return self.triggers.register([fn.spec for fn in self.registry.all()])


def get_runtime() -> Runtime:
    """The process-wide runtime, built from settings on first use (Redis + Celery kicks)."""
    global _default
    with _default_lock:
        if _default is None:
            from harness.runtime.celery_app import CeleryKicker, configure
            from harness.runtime.connection import resolve_redis_url
            from harness.settings import get_settings

            settings = get_settings()
            url = resolve_redis_url(settings)
            configure(url)
            _default = Runtime(
                redis=redis.Redis.from_url(
                    url, decode_responses=True, health_check_interval=30, socket_connect_timeout=5
                ),
                kicker=CeleryKicker(),
                keys=Keys(settings.harness_key_prefix),
                lease_ttl=settings.harness_lease_ttl,
                retry_backoff=settings.harness_retry_backoff,
                events_maxlen=settings.harness_events_maxlen,
            )
        return _default


def set_runtime(runtime: Runtime | None) -> None:
    """Replace the process-wide runtime (tests, embedding)."""
    global _default
    with _default_lock:
        _default = runtime
