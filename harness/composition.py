"""The composition root: where a fleet process is put together, in this order.

1. **Settings** (`harness.settings.get_settings`).
2. **The engine's runtime** (`harness.runtime.assembly.build_runtime`: Redis, Celery, the
   ledger), extended with what the product adds to it (`extend_runtime`).
3. **The product's records** (`harness.records`), on the runtime's Redis.
4. **Channels**: the `harness.channels` entry points, loaded and plugged into the agent
   (`plug_in_channels`), before the first channel is used.
5. **Tools**: the `harness.tools` entry points, plugged in when the agent builds its
   registries (`harness.tools.catalog`).
6. **The agent**: its function modules, loaded by the worker (`harness.fleet_functions`).

Importing a module wires nothing. The `harness` executable calls `use_fleet()` before any
command runs, so whatever asks for the process-wide runtime (`get_runtime`) gets the fleet's;
the entry points of each process call in here before their first channel or turn: `harness
worker` (`run_worker`), the web server (`harness.web.app`), and the channel commands
(`harness setup`, `harness poll`, the listeners of `harness up`). A process that never calls
in here runs the engine alone (`docs/engine.md`).

    use_fleet()                                          # first thing in an entry point
    plug_in_channels()                                   # before the first channel is used
    run_worker(settings, function_modules(settings), concurrency, queues)   # fleet_functions
    app = celery_app()                                   # `celery -A harness.celery worker`
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from harness import shared_lock
from harness.fleet.liveness import lift, require_alive
from harness.observe.json_logs import configure_logging
from harness.runtime import assembly, get_runtime
from harness.settings import Settings, get_settings

if TYPE_CHECKING:
    from celery import Celery

    from harness.agent.gateway import ModelGateway
    from harness.runtime.instance import Runtime
    from harness.runtime.worker import Companion

log = logging.getLogger(__name__)

MODEL_GATEWAY = "the model gateway"
"""What a worker's liveness requires with `MODEL_CALLS=gateway` (`require_alive`)."""


def extend_runtime(runtime: Runtime, *, usage_retention_s: int | None = None) -> Runtime:
    """Add to an engine runtime what the product needs of it; return it. Idempotent: a runtime
    extended already is returned as it is (its first `usage_retention_s` stands).

    What it adds: every built-in event (a message, a reply, an approval: `harness.events`) is
    checked against its model before it is published, not only the engine's own; and a
    `UsageRecorder` step observer counts each model call's tokens in the day's totals on the
    runtime's Redis (kept `usage_retention_s` after their last write; by default
    `harness.records.usage.DEFAULT_RETENTION_S`). (The fleet's `/metrics` step counters need
    no observer: the engine adds them with each step's commit, `harness.runtime.step_counters`.)"""
    from harness.events import validate_event
    from harness.records.usage import DEFAULT_RETENTION_S, UsageRecorder, usage_store

    runtime.check_event = validate_event
    if not any(isinstance(o, UsageRecorder) for o in runtime.step_observers):
        runtime.step_observers.append(
            UsageRecorder(usage_store(runtime, usage_retention_s or DEFAULT_RETENTION_S))
        )
    return runtime


def fleet_runtime() -> Runtime:
    """The fleet's runtime: the engine's, built from the process settings (`get_settings()`),
    extended (`extend_runtime`) with their usage retention (`USAGE_RETENTION_DAYS`). With
    `HARNESS_SHARED_ROOT` set (several hosts), the shared files' locks become Redis locks on
    it (`install_shared_locks`)."""
    settings = get_settings()
    runtime = extend_runtime(
        assembly.build_runtime(settings),
        usage_retention_s=settings.usage_retention_days * 86_400,
    )
    install_shared_locks(runtime, settings)
    return runtime


def install_shared_locks(runtime: Runtime, settings: Settings) -> bool:
    """Make this process lock the shared files (transcripts, memory) with Redis locks on
    `runtime`, named by their path under `HARNESS_SHARED_ROOT`, when that is set; otherwise
    leave the one-host `flock`s. Returns True when installed."""
    root = settings.harness_shared_root
    if root is None:
        return False
    # Imported here: every command imports this module (`use_fleet`), few build a runtime.
    from harness.runtime.file_locks import redis_file_locks

    shared_lock.install(redis_file_locks(runtime), root)
    return True


def use_fleet() -> None:
    """Make the process-wide runtime (`harness.runtime.get_runtime`) the fleet's. Cheap and
    idempotent: loads no channel, tool or agent module."""
    assembly.use_builder(fleet_runtime)


def plug_in_channels() -> list[str]:
    """Load the channel plug-ins (every `harness.channels` entry point, see `channels.plugin`)
    into the registry, and make them what chat turns in this process draw drafts on and fetch
    files from (`harness.agent.platforms`). Returns the channels' names. A plug-in that fails
    to load is left out with one log line. Safe to call again (it reloads)."""
    from channels import registry as channel_registry
    from channels.agent_seam import ChannelPlatforms
    from harness.agent import platforms

    loaded = channel_registry.load_plugins()
    platforms.install(ChannelPlatforms(channel_registry.channel_or_none))
    return loaded


def run_worker(
    settings: Settings,
    modules: list[str],
    concurrency: int,
    queues: list[str],
    companions: tuple[Companion, ...] = (),
    *,
    gateway: bool = True,
) -> None:
    """`harness.runtime.worker.run_worker` as a fleet worker: the channels are plugged in when
    it starts, as in `celery_app`'s workers; its `companions` run on threads beside it; with
    `gateway` (and `MODEL_CALLS=gateway`) a model gateway too (`start_model_gateway`), else
    the host runs one in a process of its own (`run_model_gateway`). Blocks."""
    from harness.runtime import worker

    use_fleet()
    prepare = _prepare_worker if gateway else plug_in_channels
    worker.run_worker(
        settings, modules, concurrency, queues, prepare=prepare, companions=companions
    )


def _prepare_worker() -> str | None:
    plug_in_channels()
    return _gateway_note(get_settings())


def _gateway_note(settings: Settings) -> str | None:
    """Start the model gateway (`start_model_gateway`); what started, for the worker's one
    start-up line (`WorkerStart.prepare`), or None."""
    if start_model_gateway(settings) is None:
        return None
    return f"model gateway ({settings.model_gateway_concurrency} calls at once)"


def _stop_gateway(gateway: ModelGateway) -> None:
    lift(MODEL_GATEWAY)
    gateway.stop()


def start_model_gateway(
    settings: Settings, *, on_worker_shutdown: bool = True
) -> ModelGateway | None:
    """With `MODEL_CALLS=gateway`, start this process's model gateway
    (`harness.agent.gateway`): an event loop thread making the model calls runs park on, at
    most `MODEL_GATEWAY_CONCURRENCY` at once; None otherwise. In a worker (by default) it runs
    beside the worker threads: the process already has the settings, the providers'
    credentials and the chat platforms its drafts are drawn on, and gateways grow with the
    workers; it stops when the worker does (`on_worker_shutdown`). `harness up` runs it in a
    process of its own instead (`run_model_gateway`): its streams and the model SDKs then
    take nothing from the worker's interpreter. From then on the process is alive (`harness
    health`) only while the gateway's thread runs: one whose gateway died answers no
    offloaded call, so it is restarted."""
    if settings.model_calls != "gateway":
        return None
    from harness.agent.gateway import ModelGateway  # the SDKs load only where calls are made

    concurrency = settings.model_gateway_concurrency
    gateway = ModelGateway(get_runtime(), settings, concurrency=concurrency)
    gateway.start()
    require_alive(MODEL_GATEWAY, gateway.alive)
    if on_worker_shutdown:
        from celery.signals import worker_shutdown

        # a stopping worker hands its calls in flight back, as it hands back its runs; a
        # gateway stopped on purpose is no reason to call the worker dead
        worker_shutdown.connect(lambda **_: _stop_gateway(gateway), weak=False)
    log.info("model gateway started: at most %d model calls at once", concurrency)
    return gateway


def require_offloaded_calls(settings: Settings) -> None:
    """Raise `ConfigurationError` unless `MODEL_CALLS=gateway`: with `inline` the workers make
    the model calls and a gateway process has nothing to do."""
    from harness.errors import ConfigurationError

    if settings.model_calls != "gateway":
        raise ConfigurationError(
            "MODEL_CALLS=inline: the workers make the model calls, no gateway is needed"
        )


def run_model_gateway(settings: Settings) -> None:
    """Run this host's model gateway in this process (`harness gateway`) until SIGINT or
    SIGTERM, then hand its calls in flight back: the same gateway a worker runs on a thread
    (`start_model_gateway`), with the channels plugged in for its drafts. Blocks.

    Raises `ConfigurationError` with `MODEL_CALLS=inline` (no call is offloaded) and
    `ProcessDiedError` when the gateway's thread stops on its own (a process that serves no
    call should exit, to be restarted)."""
    import signal
    import threading

    from harness.errors import ProcessDiedError

    require_offloaded_calls(settings)
    from harness.runtime.banner import say_up
    from harness.runtime.kicker import build_deferred

    use_fleet()
    plug_in_channels()
    build_deferred(get_runtime().kicker)  # a settled call kicks its run on the broker
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    gateway = start_model_gateway(settings, on_worker_shutdown=False)
    assert gateway is not None  # MODEL_CALLS=gateway, checked above
    say_up(log, "model gateway ready: %d calls at once", settings.model_gateway_concurrency)
    try:
        while not stop.wait(1.0):
            if not gateway.alive():
                raise ProcessDiedError("the model gateway's thread stopped; see the log above")
    finally:
        _stop_gateway(gateway)


def celery_app() -> Celery:
    """The fleet's Celery app, for Celery's own command line (`harness.celery`): the same app
    and the same start as `harness worker` (`harness.runtime.worker.WorkerStart`).

    Cheap: points the broker at the Redis the settings name (no connection), makes a worker's
    concurrency `WORKER_CONCURRENCY` and its logs `LOG_LEVEL` / `LOG_FORMAT` (Celery's own
    `--loglevel` is not used), and arms every worker this process starts to keep its liveness
    file, plug the channels in, load `function_modules(settings)` and register them when it
    starts. Raises
    `ConfigurationError` when no Redis is configured or running."""
    from celery.signals import setup_logging

    from harness.fleet_functions import function_modules
    from harness.runtime import worker
    from harness.runtime.celery_app import app

    use_fleet()
    settings = get_settings()
    assembly.configure_broker(settings)
    app.conf.worker_concurrency = settings.worker_concurrency
    setup_logging.connect(_log_as_settings_say, weak=False)
    start = worker.WorkerStart(tuple(function_modules(settings)), prepare=_prepare_celery_worker)
    worker.start_workers_with(start)
    return app


def _log_as_settings_say(**_: object) -> None:
    """Celery's `setup_logging`: a receiver replaces Celery's own set-up."""
    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)


def _prepare_celery_worker() -> str | None:
    from harness.fleet.liveness import liveness_for

    # Celery sets logging up only after `worker_init`: log the start itself as settings say
    _log_as_settings_say()
    # the worker's liveness file (`harness health --process worker`), as `harness worker`
    # keeps it; a daemon thread, it ends with the process
    liveness_for(get_settings(), "worker").start()
    plug_in_channels()
    return _gateway_note(get_settings())
