"""`harness up`: the whole fleet in the foreground, one terminal, logs prefixed by process.

Without `REDIS_URL` it first starts an embedded Redis in the state folder (`harness.state_dir`:
persistent, so runs survive a restart; password-protected) and hands its URL to every process.
It records itself in this user's fleet records (`harness.fleets`) so the CLI finds it from any
folder.

Restart policy: honcho runs the processes and, when one exits, or on Ctrl-C / SIGTERM, stops
the others; the embedded Redis is stopped last, and its death stops the fleet too. So web,
worker and scheduler are essential. Channel listeners (`harness poll <channel> --restart`)
never exit on a platform failure: they restart themselves in-process with backoff
(`harness.restarts`), so a bad token or an unreachable platform leaves the fleet serving.
Once `/readyz` answers 200 (a worker is live), one line says the fleet can take messages.
"""

from __future__ import annotations

import datetime
import os
import shlex
import signal
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from types import FrameType
from typing import NoReturn, TextIO

from honcho.environ import parse_procfile
from honcho.manager import Manager
from honcho.printer import Message, Printer

from harness import fleets
from harness.embedded_redis import EmbeddedRedis
from harness.errors import ConfigurationError
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
_SYSTEM = "system"
_WATCH_INTERVAL_S = 0.5


def default_processes() -> dict[str, str]:
    """`web`, `worker`, `scheduler` and (unless `SIDECAR_ENABLED=false`) `sidecar`, each
    `<this python> -m harness.cli <name>`, plus a listener for each channel that receives
    messages without webhooks (Telegram polling, Slack Socket Mode)."""
    from harness.commands.setup import extra_processes
    from harness.settings import get_settings

    python = shlex.quote(sys.executable)
    processes = {name: f"{python} -m harness.cli {name}" for name in FLEET}
    if get_settings().sidecar_enabled:  # the agent's own functions (see harness/sidecar)
        processes["sidecar"] = f"{python} -m harness.cli sidecar"
    return {**processes, **extra_processes()}


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
) -> int:
    """Run `processes` (default: `default_processes()`) until one exits or a signal arrives.

    Every child gets `REDIS_URL`: the configured one, else that of an embedded Redis started
    in `redis_dir(state_dir(settings))` (data under `<workspace>/.harness/redis` is moved
    there first), whose URL is also published to `redis_url_file(state)` and which is stopped
    (and the file removed) on return. While running, a fleet record (`harness.fleets`) names
    this workspace's Redis and web port. Output goes to `output` (default stdout), each line
    prefixed by its process name; no line carries the Redis password.
    Returns the exit code of the first process to stop (128 + signal number when killed by a
    signal; 130/143 after Ctrl-C/SIGTERM; 1 when the embedded Redis died). Must run in the
    main thread (it handles signals); restores the previous signal handlers on return.
    """
    processes = default_processes() if processes is None else dict(processes)
    if not processes:
        raise ConfigurationError("no processes to run")
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    # Until honcho installs its own handlers, SIGTERM must unwind through `finally` so that
    # the embedded Redis (in a session of its own) is not left running.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    embedded: EmbeddedRedis | None = None
    workspace = settings.agent_workspace.expanduser().resolve()
    stop_watching = threading.Event()
    watcher: threading.Thread | None = None
    try:
        printer = Printer(output if output is not None else sys.stdout)
        manager = Manager(printer=printer)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        state = state_dir(settings)
        if settings.redis_sentinels.strip():
            env["REDIS_URL"] = ""  # the processes find the master through Sentinel
        elif settings.redis_url:
            env["REDIS_URL"] = settings.redis_url
        else:
            migrate_legacy_redis(workspace, state)
            embedded = EmbeddedRedis(
                redis_dir(state),
                persist=True,
                publish_url=redis_url_file(state),
                password=redis_password(state),
            ).start()
            env["REDIS_URL"] = embedded.url
            _announce(
                printer,
                f"embedded Redis on {redact_url(embedded.url)}, data in {embedded.data_dir}",
            )
        fleets.publish(
            fleets.FleetRecord(
                workspace=str(workspace),
                state_dir=str(state),
                redis_url=env["REDIS_URL"],
                pid=os.getpid(),
                port=settings.port,
            )
        )
        for name, command in processes.items():
            manager.add_process(name, command, env=env)
        watcher = threading.Thread(
            target=_watch,
            args=(manager, embedded, settings.port if "web" in processes else None),
            kwargs={"stop": stop_watching},
            name="fleet-watch",
            daemon=True,
        )
        watcher.start()
        manager.loop()
        if embedded is not None and not embedded.running():
            return 1
        code = int(manager.returncode or 0)
        return 128 - code if code < 0 else code
    finally:
        stop_watching.set()
        if watcher is not None:
            watcher.join(timeout=5)
        fleets.withdraw(workspace, pid=os.getpid())
        # Redis first, while a signal still cannot cut the shutdown short.
        if embedded is not None:
            embedded.stop()
        for sig, handler in previous.items():
            if handler is not None:  # None: installed outside Python, cannot be restored
                signal.signal(sig, handler)


def _watch(
    manager: Manager, embedded: EmbeddedRedis | None, port: int | None, *, stop: threading.Event
) -> None:
    """Until `stop`: say once when `/readyz` on `port` answers 200, and stop the fleet when
    the embedded Redis dies (nothing can work without it)."""
    ready = port is None
    while not stop.wait(_WATCH_INTERVAL_S):
        if embedded is not None and not embedded.running():
            _announce(manager, "the embedded Redis exited; stopping the fleet")
            manager.terminate()
            return
        if not ready and _ready(port):
            ready = True
            _announce(manager, f"ready: chat with `harness chat`, or POST /api/chat on port {port}")


def _ready(port: int | None) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> NoReturn:
    raise SystemExit(128 + signum)


def _announce(target: Printer | Manager, text: str) -> None:
    """Print one `system` line: directly on a printer, or through a running manager's queue
    (thread-safe, in order with the processes' output)."""
    message = Message(
        type="line", data=text + "\n", time=datetime.datetime.now(), name=_SYSTEM, colour=None
    )
    if isinstance(target, Manager):
        target.events.put(message)
    else:
        target.write(message)
