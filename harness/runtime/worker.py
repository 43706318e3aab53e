"""Starting worker and scheduler processes: load function modules, register, consume.

Which modules a fleet worker loads is decided where the fleet is put together
(`harness.fleet_functions`); the engine names no module of the agent or the channels."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from celery.signals import worker_init, worker_ready, worker_shutdown

from harness.errors import HarnessError
from harness.fleet.heap import freeze_startup_heap
from harness.runtime.assembly import get_runtime
from harness.runtime.banner import say_up, start_celery_worker
from harness.runtime.celery_app import app
from harness.runtime.functions import WORKER_QUEUES
from harness.runtime.instance import Runtime
from harness.runtime.kicker import build_deferred
from harness.runtime.module_loader import load_function_modules
from harness.runtime.presence import Heartbeat
from harness.runtime.scheduler import run_scheduler
from harness.runtime.settings import EngineSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerStart:
    """What a Celery worker started in this process does when it initialises (Celery's
    `worker_init`), before it consumes: `prepare()` (the fleet plugs its channels in), load
    `modules`, register their functions' triggers, beat into the presence set with the queues
    it consumes (`queues`, else the ones Celery was told: `-Q`, or the default queue), and
    freeze the start-up heap. Gossip and mingle are turned off (the ledger, not the workers,
    decides who runs what). What `prepare` returns, when a string, is added to the worker's
    one line once it consumes (`model gateway (256 calls at once)`). Its `companions` are
    started then too (the scheduler's loop, the sidecar's supervisor, each on a thread of
    its own), each adding its `note` to that line, and stopped when the worker shuts down."""

    modules: tuple[str, ...]
    queues: tuple[str, ...] = ()
    prepare: Callable[[], object] | None = None
    companions: tuple[Companion, ...] = ()


class Companion(Protocol):
    """Work a worker process runs beside its own on one host, in place of a process of its
    own (`harness worker --with-scheduler --with-sidecar`, as `harness up` starts it)."""

    @property
    def note(self) -> str | None:
        """What the worker's start-up line adds about it, if anything."""

    def start(self, runtime: Runtime) -> None:
        """Start, on a thread of its own, once the worker's runtime is ready."""

    def stop(self) -> None:
        """Stop and wait for the thread (bounded). Safe when never started."""


_start: WorkerStart | None = None
_heartbeat: Heartbeat | None = None
_ready_line: str | None = None  # what the worker says once it consumes (`_on_worker_ready`)


def start_workers_with(start: WorkerStart | None) -> None:
    """Make each Celery worker started in this process from now on do `start` when it
    initialises; None: nothing (a process that consumes for another reason, the sidecar's
    executor, never calls this). The one way both `harness worker` and `celery -A
    harness.celery worker` start."""
    global _start
    _start = start


def run_worker(
    settings: EngineSettings,
    modules: list[str],
    concurrency: int,
    queues: list[str],
    prepare: Callable[[], object] | None = None,
    companions: tuple[Companion, ...] = (),
) -> None:
    """Run a Celery worker (threads, `harness.runtime.worker_pool`) advancing runs of the
    loaded functions, started as `WorkerStart(modules, queues, prepare, companions)` says.
    Blocks.

    Raises what stopped the worker's start (`ConfigurationError` naming a module that cannot
    be loaded, `BusUnavailableError`)."""
    start_workers_with(WorkerStart(tuple(modules), tuple(queues), prepare, companions))
    try:
        _consume(settings, concurrency, queues)
    except SystemExit as exc:
        if isinstance(exc.__cause__, HarnessError):
            raise exc.__cause__ from None  # the command line says it in one line
        raise
    finally:
        _on_worker_shutdown()  # a worker that never shut down cleanly still leaves


@worker_init.connect  # type: ignore[untyped-decorator]
def _on_worker_init(sender: Any, **_: object) -> None:
    """Celery calls this in a starting worker, before its consumer exists. A start-up that
    fails (a module that does not load, Redis down) stops the worker with a `SystemExit`
    saying why (Celery logs and swallows any other exception from a signal handler)."""
    global _heartbeat, _ready_line
    start = _start
    if start is None:
        return
    sender.options["without_gossip"] = sender.options["without_mingle"] = True
    note: object = None
    try:
        if start.prepare is not None:
            note = start.prepare()
        load_function_modules(start.modules)
        runtime = get_runtime()
        build_deferred(runtime.kicker)  # points Celery at the runtime's broker, before it connects
        count = runtime.register_functions()
    except Exception as exc:
        raise SystemExit(f"the worker cannot start: {exc}") from exc
    log.info("worker registered %d function(s) from %s", count, ", ".join(start.modules) or "-")
    queues = start.queues or _consumed_queues(sender)
    _ready_line = f"worker ready: {count} functions"
    if queues and set(queues) != set(WORKER_QUEUES):  # say which, when not the usual ones
        _ready_line += f" on {', '.join(queues)}"
    if isinstance(note, str):
        _ready_line += f", {note}"
    _heartbeat = Heartbeat(runtime, "worker", queues)
    _heartbeat.start()
    for companion in start.companions:
        companion.start(runtime)
        if companion.note:
            _ready_line += f", {companion.note}"
    freeze_startup_heap()


@worker_ready.connect  # type: ignore[untyped-decorator]
def _on_worker_ready(**_: object) -> None:
    """Celery calls this once the worker consumes: its one start-up line (`say_up`)."""
    if _ready_line is not None:
        say_up(log, "%s", _ready_line)


@worker_shutdown.connect  # type: ignore[untyped-decorator]
def _on_worker_shutdown(**_: object) -> None:
    """Stop the worker's companions, if it runs any, and leave the presence set when the
    worker stops."""
    global _heartbeat
    for companion in _start.companions if _start is not None else ():
        companion.stop()
    heartbeat, _heartbeat = _heartbeat, None
    if heartbeat is not None:
        heartbeat.stop()


def _consumed_queues(worker: Any) -> tuple[str, ...]:
    """The queues a starting Celery worker will consume (its `-Q`, else the default one)."""
    return tuple(str(name) for name in worker.app.amqp.queues.consume_from or ())


KICK_LINE_LOGGERS = ("celery.worker.strategy", "celery.app.trace")
"""Celery's loggers of its two lines per kick ("received", "succeeded"): several per turn that
the worker formats and `harness up` relays, for what the run's own lines and the ledger tell
better. Failures still show (they are warnings and errors)."""


def quiet_kick_lines(level: str) -> None:
    """Keep Celery's per-kick lines (`KICK_LINE_LOGGERS`) out of the log unless `level` (the
    `LOG_LEVEL` setting) is DEBUG. Call before the worker starts: Celery reads the levels
    once, when it builds its tracer."""
    quiet = logging.getLevelName(level.upper()) != logging.DEBUG
    for name in KICK_LINE_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING if quiet else logging.NOTSET)


def _consume(settings: EngineSettings, concurrency: int, queues: list[str]) -> None:
    quiet_kick_lines(settings.log_level)
    start_celery_worker(
        app,
        concurrency=concurrency,
        queues=queues,
        loglevel=settings.log_level,
        hostname=f"harness-{os.getpid()}@%h",
        without_gossip=True,
        without_mingle=True,
    )


def run_scheduler_process(
    settings: EngineSettings, on_pass: Callable[[], None] = lambda: None
) -> None:
    """Run the scheduler loop until SIGINT or SIGTERM, calling `on_pass` after each pass.
    Blocks."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    runtime = get_runtime()
    heartbeat = Heartbeat(runtime, "scheduler")
    heartbeat.start()
    try:
        run_scheduler(runtime, settings.harness_reaper_interval, stop, on_pass)
    finally:
        heartbeat.stop()
