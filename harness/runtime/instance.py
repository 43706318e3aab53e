"""The `Runtime` dataclass: the Redis client, the ledger, the kicker and the knobs, passed
around explicitly so that tests can build one on fakeredis and a clock of their own.

Building the process-wide one from settings is `harness.runtime.assembly`'s job."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
from redis.asyncio import Redis as AsyncRedis

from harness.envelope import EventCheck, check_engine_event
from harness.observe.tracing import NO_TRACER, Tracer
from harness.runtime.broadcast import Broadcast
from harness.runtime.bus_errors import redis_errors
from harness.runtime.calls import CallBoard
from harness.runtime.functions import REGISTRY, FunctionRegistry
from harness.runtime.journals import JournalCache
from harness.runtime.keys import Keys
from harness.runtime.kicker import Kicker
from harness.runtime.ledger import Ledger
from harness.runtime.run_index import RunIndex
from harness.runtime.step_observers import StepObserver
from harness.runtime.triggers import TriggerTable
from harness.runtime.waiters import KnownPaths


@dataclass
class Runtime:
    """Everything a publisher, worker or scheduler needs. Cheap to share across threads.

    `aredis`, a client of the same Redis for one event loop, serves the async paths (a web
    process's webhooks, events API and health); without one they use `redis`, blocking.
    `aredis_factory` builds another such client, for an event loop of its own (the model
    gateway's thread); whoever calls it closes what it gets.
    `tracer` gives each run execution and step a span (`harness.observe.tracing`; off by
    default). `wait_replicas` > 0 makes `publish_async` return only once that many replicas
    hold the event (`REDIS_WAIT_REPLICAS`). `check_event` checks every event before it is
    published (`harness.envelope.EventCheck`): the engine's own events by default, every
    built-in event in a fleet (`harness.composition.extend_runtime`). `step_observers` are
    told of every step that committed a result (`harness.runtime.step_observers`): where a
    product counts what steps did, such as its token usage. `call_servers` answer offloaded
    calls in this process for `harness.runtime.testing.drain` (each makes the due calls and
    returns how many): a gateway in a test, where no process of its own runs."""

    # For the engine (`harness.runtime`) and the records' Redis implementations
    # (`harness.records`) only: everyone else takes a `harness.records.stores.Records`, and
    # tests/test_redis_seam_layers.py fails for any other module that reads `.redis`.
    redis: redis.Redis
    kicker: Kicker
    registry: FunctionRegistry = field(default_factory=lambda: REGISTRY)
    keys: Keys = field(default_factory=Keys)
    lease_ttl: float = 10.0
    retry_backoff: float = 1.0
    events_maxlen: int = 10_000
    dedupe_ttl_s: int = 86_400
    retention_s: int = 7 * 86_400
    record_previews: bool = True
    tracer: Tracer = NO_TRACER
    clock: Callable[[], float] = time.time
    worker_id: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    aredis: AsyncRedis | None = None
    aredis_factory: Callable[[], AsyncRedis] | None = None
    wait_replicas: int = 0
    wait_timeout_ms: int = 1000
    check_event: EventCheck = check_engine_event
    step_observers: list[StepObserver] = field(default_factory=list)
    call_servers: list[Callable[[], int]] = field(default_factory=list)
    ledger: Ledger = field(init=False)
    calls: CallBoard = field(init=False)
    run_index: RunIndex = field(init=False)
    triggers: TriggerTable = field(init=False)
    broadcast: Broadcast = field(init=False)
    journals: JournalCache = field(init=False)
    waiter_paths: KnownPaths = field(init=False)
    stopping: threading.Event = field(init=False)

    def __post_init__(self) -> None:
        self.ledger = Ledger(self.redis, self.keys, self.aredis)
        self.calls = CallBoard(self.redis, self.keys)
        self.run_index = RunIndex(self.redis, self.keys)
        self.triggers = TriggerTable(self.redis, self.keys, self.aredis)
        self.broadcast = Broadcast(self.redis)
        self.journals = JournalCache()
        self.waiter_paths = KnownPaths()
        self.stopping = threading.Event()

    def ping(self) -> None:
        """Return when Redis answers PING; raise `BusUnavailableError` (its cause is the
        client's error) when it does not."""
        with redis_errors("ping Redis"):
            self.redis.ping()

    async def ping_async(self) -> None:
        """`ping` without blocking the event loop."""
        if self.aredis is None:
            self.ping()
            return
        with redis_errors("ping Redis"):
            await self.aredis.ping()

    async def aclose(self) -> None:
        """Close the async clients (Redis, and the kicker's when it has one), on the loop that
        used them. Idempotent."""
        closer = getattr(self.kicker, "aclose", None)
        if closer is not None:
            await closer()
        if self.aredis is not None:
            await self.aredis.aclose(close_connection_pool=True)

    def now_ms(self) -> int:
        """Milliseconds since the epoch by this runtime's clock."""
        return int(self.clock() * 1000)

    def new_owner(self) -> str:
        """A lease owner name unique to one execution attempt."""
        return f"{self.worker_id}:{uuid.uuid4().hex[:8]}"

    def register_functions(self) -> int:
        """Write the specs of every function in this process's registry to the trigger table."""
        return self.triggers.register([fn.spec for fn in self.registry.all()])
