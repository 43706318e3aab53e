"""The sidecar child: one fresh interpreter that loads `functions/`, registers, and runs.

Started by the supervisor (`python -m harness.sidecar.child`) with the environment of
`environment.child_environment` and its working directory in the functions folder. In order:
limit its own resources, load every file (helpers are imported fresh, since the process is
new), force every function onto the sidecar queue under a timeout, replace the sidecar's set
of functions and load errors in the trigger table in one step, then consume the sidecar queue
with a Celery worker. It tells the supervisor it is ready by writing a line to the file
descriptor named in `READY_FD_ENV`, once the worker consumes.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery.signals import worker_ready

from harness.runtime import Function, get_runtime
from harness.runtime.celery_app import app
from harness.runtime.function_sources import (
    FILE_SOURCE,
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
SKIP_ENV = "HARNESS_SIDECAR_SKIP"
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


def register(settings: Settings) -> int:
    """Load the folder and make its functions (plus the built-ins) the sidecar's set in the
    trigger table. Returns how many workspace functions were registered."""
    runtime = get_runtime()
    folder = settings.agent_workspace.resolve() / "functions"
    table = {spec.id for spec in runtime.triggers.specs()}
    reserved = (table - source_ids(runtime, FILE_SOURCE)) | BUILTIN_IDS
    skip = decode_skip(os.environ.get(SKIP_ENV, ""))
    loaded = load_folder(folder, reserved=reserved, skip=skip)
    functions = [prepare(fn, settings) for fn in loaded.functions]
    functions += [prepare(fn, settings) for fn in builtin_functions(loaded.files)]
    specs: dict[str, Any] = {}
    for fn in functions:
        REGISTRY.register(fn)
        specs[fn.id] = (fn.spec, Origin(source=FILE_SOURCE, file=loaded.files.get(fn.id, "")))
    replace_source(runtime, FILE_SOURCE, specs, loaded.report.errors)
    for error in loaded.report.errors:
        log.warning("skipped %s", error.describe())
    log.info(
        "sidecar child %d registered %d function(s) from %s",
        os.getpid(), len(loaded.functions), folder,
    )  # fmt: skip
    return len(loaded.functions)


def _announce_ready(**_: object) -> None:
    fd = os.environ.get(READY_FD_ENV)
    if fd:
        os.write(int(fd), b"ready\n")
        os.close(int(fd))


def main() -> int:
    """Run the child until SIGTERM (Celery's warm shutdown). Returns its exit code."""
    settings = get_settings()
    apply_limits(settings.sidecar_memory_mb, settings.sidecar_cpu_seconds)
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    register(settings)
    runtime = get_runtime()
    heartbeat = Heartbeat(runtime, "sidecar", (settings.sidecar_queue,))
    heartbeat.start()
    worker_ready.connect(_announce_ready, weak=False)
    try:
        app.worker_main(
            [
                "worker",
                "--pool=threads",
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
