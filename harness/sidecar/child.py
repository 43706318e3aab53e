"""The sidecar child: one fresh interpreter that loads `functions/`, registers, and runs.

Started by the supervisor (`python -m harness.sidecar.child`) with the environment of
`environment.child_environment` and its working directory in the functions folder. In order:
limit its own resources, import the harness and Celery, wait for one line on stdin (the files
the validation rejected; the supervisor keeps one child waiting there, warm), load every file
(helpers are imported fresh: no file of the folder was imported before the line came), force
every function onto the sidecar queue under a timeout, start a Celery worker on the sidecar
queue and, once it consumes, replace the sidecar's set of functions and load
errors in the trigger table in one step and tell the supervisor (a line written to the file
descriptor named in `READY_FD_ENV`). Celery is touched here and in `harness.runtime`.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from celery.signals import worker_ready

from harness.runtime import Function, FunctionSpec, Runtime, get_runtime
from harness.runtime.celery_app import app
from harness.runtime.function_sources import (
    FILE_SOURCE,
    LoadError,
    Origin,
    replace_source,
    source_ids,
)
from harness.runtime.functions import REGISTRY
from harness.runtime.presence import Heartbeat
from harness.runtime.run_timeouts import with_timeout
from harness.settings import Settings, get_settings
from harness.sidecar.builtins import BUILTIN_IDS, builtin_functions
from harness.sidecar.environment import apply_limits
from harness.sidecar.loader import load_folder
from harness.sidecar.validate import decode_skip

log = logging.getLogger("harness.sidecar")
READY_FD_ENV = "HARNESS_SIDECAR_READY_FD"
# what `app.worker_main` imports lazily: imported before the child waits, so a warm child
# starts consuming sooner once it is told to go
WORKER_MODULES = (
    "celery.bin.celery",  # the command line `worker_main` goes through (click, prompt_toolkit)
    "celery.apps.worker",
    "celery.app.amqp",
    "celery.app.control",
    "celery.events.dispatcher",
    "celery.worker.components",
    "celery.worker.consumer",
    "celery.worker.strategy",
    "celery.concurrency.thread",
    "kombu.transport.redis",
    "kombu.pidbox",
)
EXIT_RUN_TIMEOUT = 75


def prepare(fn: Function, settings: Settings) -> Function:
    """`fn` on the sidecar queue, under its own timeout or `SIDECAR_RUN_TIMEOUT`."""
    spec = fn.spec.model_copy(update={"queue": settings.sidecar_queue})
    seconds = spec.timeout or settings.sidecar_run_timeout
    return with_timeout(Function(spec=spec, handler=fn.handler), seconds, _end_process)


def _end_process(run_id: str) -> None:
    log.error("run %s outlived its timeout; ending this sidecar child to stop it", run_id)
    logging.shutdown()
    os._exit(EXIT_RUN_TIMEOUT)


@dataclass
class Loaded:
    """What this child loaded: every function it runs, and the registration to publish."""

    functions: list[Function]
    specs: dict[str, tuple[FunctionSpec, Origin]]
    errors: list[LoadError]


def load(settings: Settings, runtime: Runtime, skip: dict[str, LoadError]) -> Loaded:
    """Load the folder into the process registry, workspace functions plus built-ins, each on
    the sidecar queue under its timeout. Ids already in the trigger table from elsewhere are
    refused as load errors (the validation, given the fleet's built-in ids, refused those
    before any worker registered them: such files come in `skip`)."""
    folder = settings.agent_workspace.resolve() / "functions"
    table = {spec.id for spec in runtime.triggers.specs()}
    reserved = (table - source_ids(runtime, FILE_SOURCE)) | BUILTIN_IDS
    loaded = load_folder(folder, reserved=reserved, skip=skip)
    functions = [prepare(fn, settings) for fn in loaded.functions]
    builtins = builtin_functions(loaded.files, fleet_ids=reserved)
    functions += [prepare(fn, settings) for fn in builtins]
    specs = {}
    for fn in functions:
        REGISTRY.register(fn)
        specs[fn.id] = (fn.spec, Origin(source=FILE_SOURCE, file=loaded.files.get(fn.id, "")))
    for error in loaded.report.errors:
        log.warning("skipped %s", error.describe())
    return Loaded(functions=functions, specs=specs, errors=loaded.report.errors)


def _on_ready(runtime: Runtime, loaded: Loaded) -> Callable[..., None]:
    def ready(**_: object) -> None:
        # Registered only now that this worker consumes: an event for a new function never
        # waits on a queue that nobody who knows the function reads.
        replace_source(runtime, FILE_SOURCE, loaded.specs, loaded.errors)
        log.info(
            "sidecar child %d registered %d function(s), %d file(s) skipped",
            os.getpid(), len(loaded.specs) - len(BUILTIN_IDS), len(loaded.errors),
        )  # fmt: skip
        fd = os.environ.get(READY_FD_ENV)
        if fd:
            os.write(int(fd), b"ready\n")
            os.close(int(fd))

    return ready


def _exit_with_parent(parent: int) -> None:
    """End this child when the supervisor is gone (killed outright): an orphan would keep
    consuming the queue with code nobody watches any more."""
    while os.getppid() == parent:
        time.sleep(1.0)
    log.warning("the sidecar supervisor %d is gone; ending child %d", parent, os.getpid())
    os._exit(0)


def main() -> int:
    """Run the child until SIGTERM (Celery's warm shutdown). Returns its exit code."""
    settings = get_settings()
    apply_limits(settings.sidecar_memory_mb, settings.sidecar_cpu_seconds)
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    runtime = get_runtime()
    for module in WORKER_MODULES:
        importlib.import_module(module)
    line = sys.stdin.readline()  # a warm child waits here for the files to skip
    if not line.strip():
        return 0  # a spare the supervisor no longer needs
    loaded = load(settings, runtime, decode_skip(line))
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    heartbeat = Heartbeat(runtime, "sidecar", (settings.sidecar_queue,))
    heartbeat.start()
    worker_ready.connect(_on_ready(runtime, loaded), weak=False)
    try:
        app.worker_main(
            [
                "worker",
                f"--concurrency={settings.sidecar_concurrency}",
                f"--queues={settings.sidecar_queue}",
                f"--loglevel={settings.log_level}",
                f"--hostname=sidecar-{os.getpid()}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ]
        )
    finally:
        heartbeat.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
