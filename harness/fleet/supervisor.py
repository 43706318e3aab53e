"""`harness up`: the whole fleet in the foreground, one terminal, logs prefixed by process.

Without `REDIS_URL` it first starts an embedded Redis in the state folder (`harness.state_dir`:
persistent, so runs survive a restart; password-protected) and hands its URL to every process.
It records itself in this user's fleet records (`harness.fleet.fleets`) so the CLI finds it from
any folder. Before starting anything it checks that the web port is free, and says to set
`PORT` when it is not.

Two halves: `plan_fleet` does all of that here, with the settings, redis-py and the channel
plug-ins loaded; `harness.fleet.supervision.supervise` runs the plan with none of them. `harness
up` (`exec_fleet`) then replaces its process with `python -m harness.fleet.up`, which only
supervises (same pid; about 16 MB for the fleet's whole life instead of 74); `run_fleet` does
both in this process.

Restart policy: `harness.fleet.process_manager` runs the processes and, when one exits, on
Ctrl-C / SIGTERM, or when our output's reader goes away, stops the others (each with
everything it started; a second Ctrl-C kills at once); the embedded Redis is stopped last, and
its death stops the fleet too. So web, worker, scheduler and the model gateway are essential
(on one host the scheduler and the sidecar run on threads of the worker, and the gateway in a
process of its own beside it: `beside_the_worker`). Channel listeners (`harness poll <channel>
--restart`) never exit on a platform failure: they restart themselves in-process with backoff
(`harness.fleet.restarts`), so a bad token or an unreachable platform leaves the fleet serving.
Once `/readyz` answers 200 from our own web process (it echoes this start's fleet id,
`harness.fleet.readiness`), one line says the fleet can take messages.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shlex
import signal
import socket
import sys
from pathlib import Path
from typing import NoReturn, TextIO

from honcho.environ import parse_procfile

from harness.errors import ConfigurationError
from harness.fleet import fleets
from harness.fleet.embedded_redis import EmbeddedRedis
from harness.fleet.readiness import FLEET_ID_ENV
from harness.fleet.supervision import (
    FleetPlan,
    RedisChild,
    exit_on_sigterm,
    stand_down,
    supervise,
)
from harness.fleet.up import hand_over
from harness.runtime.banner import GATE, QUIET_ENV, ROOT_WARNING
from harness.runtime.connection import resolve_redis_url
from harness.runtime.functions import DEFAULT_QUEUE
from harness.settings import Settings
from harness.state_dir import (
    migrate_legacy_redis,
    redis_dir,
    redis_password,
    redis_url_file,
    state_dir,
)
from harness.urls import redact_url

FLEET = ("web", "worker", "scheduler")


def default_processes() -> dict[str, str]:
    """`web`, `worker`, `scheduler`, (with `MODEL_CALLS=gateway`, the default) `gateway` and
    (unless `SIDECAR_ENABLED=false`) `sidecar`, each `exec <this python> -m harness.cli
    <name>`, plus a listener for each channel that receives messages without webhooks
    (Telegram polling, Slack Socket Mode)."""
    from harness.commands.setup import extra_processes
    from harness.settings import get_settings

    settings = get_settings()
    processes = {name: _own_command(name) for name in FLEET}
    if settings.model_calls == "gateway":  # the model calls runs park on (harness.agent.gateway)
        processes["gateway"] = _own_command("gateway")
    if settings.sidecar_enabled:  # the agent's own functions (see harness/sidecar)
        processes["sidecar"] = _own_command("sidecar")
    return {**processes, **extra_processes()}


def _own_command(name: str) -> str:
    # `exec`: the shell that runs each command gives way to it, rather than waiting beside
    # it for the fleet's whole life (one process and ~1.6 MB fewer per command)
    return f"exec {shlex.quote(sys.executable)} -m harness.cli {name}"


def _complete_workspace(workspace: Path) -> None:
    """Create or complete the workspace (`ensure_workspace`, which a worker does again at its
    first turn) before any process starts: on a fresh one the sidecar's first load then has
    the shipped example, rather than reloading for it (a validation and a spare executor,
    about 90 MB for a while) just as the first message is answered. A workspace that cannot
    be written is left for the worker to report."""
    from harness.agent.workspace import default_shipped_skills, default_template, ensure_workspace

    with contextlib.suppress(OSError):
        ensure_workspace(workspace, default_template(), default_shipped_skills())


BESIDE_THE_WORKER = {"scheduler": "--with-scheduler", "sidecar": "--with-sidecar"}
"""The fleet's processes a worker can run on threads of its own instead (`beside_the_worker`)."""


def beside_the_worker(processes: dict[str, str]) -> dict[str, str]:
    """`processes` with the `scheduler` and the `sidecar` run on threads of the `worker`
    (`harness worker --with-scheduler --with-sidecar`) when each is the fleet's own command
    (`default_processes`), like the worker: one interpreter, about 60 MB, and one start fewer
    for each. The model `gateway`, when it runs as the fleet's own command, stays a process of
    its own, and the worker runs none (`--no-gateway`): the calls' streams and the model SDKs
    then take nothing from the worker's interpreter, and run on the other core. That process
    also posts the replies (`harness gateway --deliver`: the delivery queue, which the worker
    then leaves alone, `--queues harness`), so a wave's answers are replayed on one core while
    they are posted on the other. A Procfile's commands, or a worker chosen without them
    (`--only`), are left as they are; so is any of them chosen without the worker."""
    if processes.get("worker") != _own_command("worker"):
        return processes
    beside = [n for n in BESIDE_THE_WORKER if processes.get(n) == _own_command(n)]
    flags = [BESIDE_THE_WORKER[n] for n in beside]
    folded = {name: command for name, command in processes.items() if name not in beside}
    if processes.get("gateway") == _own_command("gateway"):
        flags += ["--no-gateway", "--queues", DEFAULT_QUEUE]
        folded["gateway"] = f"{processes['gateway']} --deliver"
    if not flags:
        return processes
    folded["worker"] = " ".join([processes["worker"], *flags])
    return folded


def procfile_processes(path: Path) -> dict[str, str]:
    """The processes a Procfile declares (`name: command` lines), in file order.

    Raises `ConfigurationError` when the file cannot be read or declares nothing.
    """
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigurationError(f"cannot read Procfile {path}: {exc.strerror}") from exc
    processes = {str(name): str(cmd) for name, cmd in parse_procfile(text).processes.items()}
    if not processes:
        raise ConfigurationError(f"{path} declares no processes; write lines like `web: cmd`")
    return processes


def run_fleet(
    settings: Settings,
    processes: dict[str, str] | None = None,
    *,
    output: TextIO | None = None,
    embedded_redis: bool = True,
    quiet: bool = False,
) -> int:
    """Run `processes` (default: `default_processes()`) until one exits or a signal arrives,
    the scheduler and the sidecar on the worker's threads when they are the fleet's own
    (`beside_the_worker`), in this process (`exec_fleet` supervises in a slim one).

    When a `web` process is among them, its port (`settings.host`:`settings.port`) must be
    free: else `ConfigurationError` naming PORT is raised before anything starts; so is one when
    `HARNESS_SHARED_ROOT` is set without a Redis (an embedded Redis per host would share one
    data folder there). Every child gets `REDIS_URL`: the configured one, else that of an
    embedded Redis started in `redis_dir(state_dir(settings))` (data under
    `<workspace>/.harness/redis` is moved there first), whose URL is also published to
    `redis_url_file(state)` and which is stopped (and the file removed) on return. While
    running, a fleet record (`harness.fleet.fleets`) names this workspace's Redis and web port.
    Output goes to `output` (default stdout), each line prefixed by its process name; no line
    carries the Redis password. When stdout breaks (its reader exited), the fleet stops and
    stdout is pointed at /dev/null. Without `embedded_redis` (`harness up --only` without
    `redis`) no Redis is started: the processes use the one a running fleet of this workspace
    published (`resolve_redis_url`; `ConfigurationError` when there is none) and no fleet
    record is written. `quiet` (`QUIET_ENV`) makes each process say one line once it is up
    (`harness.runtime.banner`), and the fleet say once that it runs as root, when it does.
    Returns the exit code of the first process to stop (128 + signal number when killed by a
    signal; 130/143 after Ctrl-C/SIGTERM; 141 when the output broke; 1 when the embedded
    Redis died). On return no process it started runs. Must run in the main thread (it
    handles signals); restores the previous signal handlers on return.
    """
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    # Until the manager installs its own handlers, SIGTERM must unwind through `finally` so
    # that the embedded Redis (in a session of its own) is not left running.
    signal.signal(signal.SIGTERM, exit_on_sigterm)
    try:
        plan, embedded = plan_fleet(settings, processes, embedded_redis=embedded_redis, quiet=quiet)
        return supervise(plan, output=output, redis=embedded)
    finally:
        for sig, handler in previous.items():
            if handler is not None:  # None: installed outside Python, cannot be restored
                signal.signal(sig, handler)


def exec_fleet(
    settings: Settings,
    processes: dict[str, str] | None = None,
    *,
    embedded_redis: bool = True,
    quiet: bool = False,
) -> NoReturn:
    """`run_fleet` for `harness up`: plan the fleet here (`plan_fleet`), then replace this
    process with a slim supervisor (`harness.fleet.up`: same pid, about 16 MB instead of this
    process's 74) that runs it to the end and exits with `run_fleet`'s code. Raises as
    `run_fleet` does before anything starts; when the exec fails (`OSError`), what was started
    is stopped first. Without `sys.executable` the fleet runs in this process, and this
    exits with its code."""
    if not sys.executable:
        sys.exit(run_fleet(settings, processes, embedded_redis=embedded_redis, quiet=quiet))
    signal.signal(signal.SIGTERM, exit_on_sigterm)  # until the exec: see `run_fleet`
    plan, embedded = plan_fleet(settings, processes, embedded_redis=embedded_redis, quiet=quiet)
    try:
        child = None if embedded is None else RedisChild(embedded.pid, embedded.publish_url)
        hand_over(plan, child)
    except BaseException:
        stand_down(plan, embedded)
        raise


def plan_fleet(
    settings: Settings,
    processes: dict[str, str] | None = None,
    *,
    embedded_redis: bool = True,
    quiet: bool = False,
) -> tuple[FleetPlan, EmbeddedRedis | None]:
    """What `run_fleet` does before its processes start: the checks (raising before anything
    starts), the Redis (the embedded one started, when one is needed), the workspace
    completed and the fleet record published. Returns the plan to `supervise` and the
    embedded Redis, if any; on a failure after starting it, stops it and re-raises."""
    processes = beside_the_worker(default_processes() if processes is None else processes)
    if not processes:
        raise ConfigurationError("no processes to run")
    if "web" in processes:
        check_port_free(settings.host, settings.port)
    if settings.harness_shared_root is not None and not (
        settings.redis_url or settings.redis_sentinels.strip()
    ):
        raise ConfigurationError(
            "HARNESS_SHARED_ROOT is set (several hosts) but REDIS_URL and REDIS_SENTINELS are "
            "not: every host needs the same Redis, so set one (the embedded Redis serves one "
            "host only)"
        )
    workspace = settings.agent_workspace.expanduser().resolve()
    fleet_id = secrets.token_hex(8)
    env = {"PYTHONUNBUFFERED": "1", FLEET_ID_ENV: fleet_id}
    said: list[str] = []
    if quiet:
        env[QUIET_ENV] = "1"
        GATE.hold()  # the embedded Redis's own line: the fleet says it, once
    state = state_dir(settings)
    embedded: EmbeddedRedis | None = None
    record: Path | None = None
    borrowed = False
    try:
        if settings.redis_sentinels.strip():
            env["REDIS_URL"] = ""  # the processes find the master through Sentinel
        elif settings.redis_url:
            env["REDIS_URL"] = settings.redis_url
        elif not embedded_redis:
            env["REDIS_URL"] = resolve_redis_url(settings)
            borrowed = True
            said.append(f"using the running fleet's Redis on {redact_url(env['REDIS_URL'])}")
        else:
            migrate_legacy_redis(workspace, state)
            embedded = EmbeddedRedis(
                redis_dir(state),
                persist=True,
                publish_url=redis_url_file(state),
                password=redis_password(state),
            ).start()
            env["REDIS_URL"] = embedded.url
            said.append(
                f"embedded Redis on {redact_url(embedded.url)}, data in {embedded.data_dir}"
            )
        _complete_workspace(workspace)  # while quiet, its routine lines are held back
        GATE.open()
        if quiet and os.geteuid() == 0 and {"worker", "sidecar"} & processes.keys():
            said.append(ROOT_WARNING)  # in place of each Celery worker's 9 lines
        if not borrowed:  # the fleet that owns the Redis keeps the workspace's record
            record = fleets.publish(
                fleets.FleetRecord(
                    workspace=str(workspace),
                    state_dir=str(state),
                    redis_url=env["REDIS_URL"],
                    pid=os.getpid(),
                    port=settings.port,
                    folder=str(Path.cwd().resolve()),
                )
            )
    except BaseException:
        if embedded is not None:
            embedded.stop()
        raise
    plan = FleetPlan(
        processes=processes,
        env=env,
        quiet=quiet,
        announcements=tuple(said),
        port=settings.port if "web" in processes else None,
        fleet_id=fleet_id,
        api_key=settings.harness_api_key is not None,
        record=None if record is None else str(record),
    )
    return plan, embedded


def check_port_free(host: str, port: int) -> None:
    """Raise `ConfigurationError` naming PORT when nothing could listen on `host`:`port`
    now (another server holds it). Binds the way uvicorn does (SO_REUSEADDR), so a port
    left in TIME_WAIT by a fleet that just stopped counts as free."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigurationError(
                    f"port {port} is already in use on {host}: another server (maybe another "
                    "`harness up`) listens there; stop it, or choose another port with PORT in "
                    ".env or `harness up --port`"
                ) from None
            raise ConfigurationError(
                f"cannot listen on {host}:{port} ({exc.strerror}); check PORT and HOST"
            ) from None
