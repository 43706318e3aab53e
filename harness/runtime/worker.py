"""Starting worker and scheduler processes: load function modules, register, consume.

Which modules a fleet worker loads is decided where the fleet is put together
(`harness.fleet_functions`); the engine names no module of the agent or the channels."""

from __future__ import annotations

import importlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable

from harness.errors import ConfigurationError
from harness.fleet.heap import freeze_startup_heap
from harness.runtime.assembly import get_runtime
from harness.runtime.celery_app import app
from harness.runtime.presence import Heartbeat
from harness.runtime.scheduler import run_scheduler
from harness.runtime.settings import EngineSettings

log = logging.getLogger(__name__)


def load_function_modules(modules: Iterable[str]) -> None:
    """Import each module so its `@function` declarations register themselves.

    Raises `ConfigurationError` naming the module that failed to import and where such
    modules are named (`HARNESS_FUNCTION_MODULES`, `--functions`).
    """
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:
            raise ConfigurationError(
                f"cannot load function module {module!r} (check HARNESS_FUNCTION_MODULES and "
                f"--functions): {exc}"
            ) from exc


def run_worker(
    settings: EngineSettings, modules: list[str], concurrency: int, queues: list[str]
) -> None:
    """Run a Celery worker (threads, `harness.runtime.worker_pool`) advancing runs of the
    loaded functions. Blocks."""
    load_function_modules(modules)
    runtime = get_runtime()
    count = runtime.register_functions()
    log.info("worker registered %d function(s) from %s", count, ", ".join(modules) or "-")
    heartbeat = Heartbeat(runtime, "worker", tuple(queues))
    heartbeat.start()
    freeze_startup_heap()
    try:
        _consume(settings, concurrency, queues)
    finally:
        heartbeat.stop()


def _consume(settings: EngineSettings, concurrency: int, queues: list[str]) -> None:
    app.worker_main(
        [
            "worker",
            f"--concurrency={concurrency}",
            f"--queues={','.join(queues)}",
            f"--loglevel={settings.log_level}",
            f"--hostname=harness-{os.getpid()}@%h",
            "--without-gossip",
            "--without-mingle",
        ]
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
