"""The sidecar's trusted executor: the Celery worker on the sidecar queue, with the fleet's
Redis, that runs the agent's functions in a function host it never imports them into.

Started by the supervisor (`python -m harness.sidecar.executor`) with
`environment.executor_environment`, outside the workspace (it reads no `.env`). In order:
start the function host (`host.py`, sandboxed, without credentials; it imports the harness
meanwhile), import Celery, wait for one line on stdin (the files the validation rejected;
an executor the supervisor started when a file changed waits there, warm, with its host,
until the debounce ends), have the host load
the folder, check what it reports (`admission.py`), register a forwarding handler
(`forwarding.py`, which decides what a function may reach: the functions it loaded, the
chats the fleet serves) for each function on the sidecar queue under a timeout, start a Celery
worker on that queue and, once it consumes, replace the sidecar's set of functions and
load errors in the trigger table in one step and tell the supervisor (a line written to
the file descriptor named in `environment.READY_FD_ENV`). An execution that outlives its
timeout fails its run and ends the host; a new host takes over. Celery is touched here and
in `harness.runtime`.
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

from harness.composition import use_fleet
from harness.observe.json_logs import configure_logging
from harness.runtime import Function, FunctionSpec, Runtime, get_runtime
from harness.runtime.banner import GATE, hold_start_up_lines, start_celery_worker
from harness.runtime.celery_app import app
from harness.runtime.function_sources import (
    FILE_SOURCE,
    Declaration,
    LoadError,
    Origin,
    replace_source,
    source_ids,
)
from harness.runtime.functions import REGISTRY
from harness.runtime.kicker import build_deferred
from harness.runtime.presence import Heartbeat
from harness.runtime.run_timeouts import with_timeout
from harness.settings import Settings, get_settings
from harness.sidecar.admission import admit
from harness.sidecar.builtins import BUILTIN_IDS, builtin_functions
from harness.sidecar.environment import READY_FD_ENV, function_environment
from harness.sidecar.forwarding import Reach, forwarding_function
from harness.sidecar.host_link import HostBroken, HostLink
from harness.sidecar.sandbox import FunctionSandbox, confined_python
from harness.sidecar.served_chats import ServedChats
from harness.sidecar.served_files import file_digests
from harness.sidecar.validate import decode_skip
from harness.sidecar.wire import Load

log = logging.getLogger("harness.sidecar")
# what a starting Celery worker imports lazily: imported before the child waits, so a warm
# child starts consuming sooner once it is told to go
WORKER_MODULES = (
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
EXIT_HOST_BROKEN = 76
HOST_MODULE = "harness.sidecar.host"


def prepare(fn: Function, settings: Settings, on_expiry: Callable[[str], None]) -> Function:
    """`fn` on the sidecar queue, under its own timeout or `SIDECAR_RUN_TIMEOUT`."""
    spec = fn.spec.model_copy(update={"queue": settings.sidecar_queue})
    seconds = spec.timeout or settings.sidecar_run_timeout
    return with_timeout(Function(spec=spec, handler=fn.handler), seconds, on_expiry)


def host_link(settings: Settings) -> HostLink:
    """The link to a function host for the settings' workspace (not started). Raises
    `ConfigurationError` when functions cannot run here (`sandbox.refusal`)."""
    folder = settings.agent_workspace.resolve() / "functions"
    sandbox = FunctionSandbox.from_settings(settings)
    argv = confined_python(HOST_MODULE, [str(folder)], folder.parent, sandbox)
    env = function_environment(settings, os.environ)
    return HostLink(argv, env, folder, on_broken=_host_broken)


def _host_broken(why: str) -> None:
    log.error("%s; ending this sidecar executor (the supervisor starts a new one)", why)
    logging.shutdown()
    os._exit(EXIT_HOST_BROKEN)


@dataclass
class Loaded:
    """What this executor runs: every function, and the registration to publish (with the
    networks the files declare)."""

    functions: list[Function]
    specs: dict[str, tuple[FunctionSpec, Origin]]
    errors: list[LoadError]
    declarations: list[Declaration]


def load(
    settings: Settings, runtime: Runtime, link: HostLink, skip: dict[str, LoadError]
) -> Loaded:
    """Have the host load the folder; register a forwarding handler for each function it
    declared that passes `admit`, plus the built-ins, each on the sidecar queue under its
    timeout. Ids already in the trigger table from elsewhere are refused as load errors (the
    validation, given the fleet's built-in ids, refused those before any worker registered
    them: such files come in `skip`). Raises `HostBroken` when the host does not load."""
    table = {spec.id for spec in runtime.triggers.specs()}
    reserved = (table - source_ids(runtime, FILE_SOURCE)) | BUILTIN_IDS
    digests = file_digests(settings.agent_workspace.resolve() / "functions")  # before loading
    report = link.load(Load(reserved=sorted(reserved), skip=list(skip.values())))
    admitted = admit(report, reserved)
    own_ids = frozenset(spec.id for spec in admitted.specs)
    reach = Reach(own_ids, ServedChats.configured(runtime, settings.dm_policy))

    def expire(run_id: str) -> None:
        link.end(f"run {run_id} outlived its timeout")

    functions = [
        prepare(forwarding_function(spec, link, reach), settings, expire) for spec in admitted.specs
    ]
    builtins = builtin_functions(admitted.files, fleet_ids=reserved)
    functions += [prepare(fn, settings, expire) for fn in builtins]
    specs = {}
    for fn in functions:
        REGISTRY.register(fn)
        file = admitted.files.get(fn.id, "")
        origin = Origin(source=FILE_SOURCE, file=file, digest=digests.get(file, ""))
        specs[fn.id] = (fn.spec, origin)
    for error in admitted.errors:
        log.warning("skipped %s", error.describe())
    return Loaded(
        functions=functions, specs=specs, errors=admitted.errors,
        declarations=admitted.declarations,
    )  # fmt: skip


def _on_ready(runtime: Runtime, loaded: Loaded) -> Callable[..., None]:
    def ready(**_: object) -> None:
        # Registered only now that this worker consumes: an event for a new function never
        # waits on a queue that nobody who knows the function reads.
        replace_source(runtime, FILE_SOURCE, loaded.specs, loaded.errors, loaded.declarations)
        log.info(
            "sidecar executor %d registered %d function(s), %d file(s) skipped",
            os.getpid(), len(loaded.specs) - len(BUILTIN_IDS), len(loaded.errors),
        )  # fmt: skip
        GATE.open()  # the supervisor says the sidecar is up; later lines print as they come
        fd = os.environ.get(READY_FD_ENV)
        if fd:
            os.write(int(fd), b"ready\n")
            os.close(int(fd))

    return ready


def _exit_with_parent(parent: int) -> None:
    """End this executor when the supervisor is gone (killed outright): an orphan would keep
    consuming the queue with code nobody watches any more. Its host sees its stdin end."""
    while os.getppid() == parent:
        time.sleep(1.0)
    log.warning("the sidecar supervisor %d is gone; ending executor %d", parent, os.getpid())
    os._exit(0)


def main() -> int:
    """Run the executor until SIGTERM (Celery's warm shutdown). Returns its exit code."""
    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)
    hold_start_up_lines()
    link = host_link(settings)
    try:
        link.start()  # the host imports the harness while this process imports Celery
        use_fleet()
        runtime = get_runtime()
        build_deferred(runtime.kicker)  # points Celery at the runtime's broker, before it consumes
        for module in WORKER_MODULES:
            importlib.import_module(module)
        line = sys.stdin.readline()  # a warm executor waits here for the files to skip
        if not line.strip():
            return 0  # a spare the supervisor no longer needs
        loaded = load(settings, runtime, link, decode_skip(line))
    except HostBroken as exc:
        log.error("%s", exc)
        link.close()
        return EXIT_HOST_BROKEN
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    heartbeat = Heartbeat(runtime, "sidecar", (settings.sidecar_queue,))
    heartbeat.start()
    worker_ready.connect(_on_ready(runtime, loaded), weak=False)
    try:
        start_celery_worker(
            app,
            concurrency=settings.sidecar_concurrency,
            queues=[settings.sidecar_queue],
            loglevel=settings.log_level,
            hostname=f"sidecar-{os.getpid()}@%h",
            without_gossip=True,
            without_mingle=True,
            without_heartbeat=True,
        )
    finally:
        heartbeat.stop()
        link.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
