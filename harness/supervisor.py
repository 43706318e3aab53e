"""`harness up`: the whole fleet in the foreground, one terminal, logs prefixed by process.

Without `REDIS_URL` it first starts an embedded Redis under the workspace (persistent, so
runs survive a restart) and hands its URL to every process. honcho runs the processes: when
one exits, or on Ctrl-C / SIGTERM, it stops the others; the embedded Redis is stopped last.
"""

from __future__ import annotations

import datetime
import os
import shlex
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import NoReturn, TextIO

from honcho.environ import parse_procfile
from honcho.manager import Manager
from honcho.printer import Message, Printer

from harness.embedded_redis import EmbeddedRedis
from harness.errors import ConfigurationError
from harness.runtime.connection import embedded_url_file
from harness.settings import Settings

FLEET = ("web", "worker", "scheduler")
_SYSTEM = "system"


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
    under `<workspace>/.harness/redis`, whose URL is also published to
    `embedded_url_file(workspace)` and which is stopped (and the file removed) on return.
    Output goes to `output` (default stdout), each line prefixed by its process name.
    Returns the exit code of the first process to stop (128 + signal number when killed by a
    signal; 130/143 after Ctrl-C/SIGTERM). Must run in the main thread (it handles signals);
    restores the previous signal handlers on return.
    """
    processes = default_processes() if processes is None else dict(processes)
    if not processes:
        raise ConfigurationError("no processes to run")
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    # Until honcho installs its own handlers, SIGTERM must unwind through `finally` so that
    # the embedded Redis (in a session of its own) is not left running.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    embedded: EmbeddedRedis | None = None
    try:
        printer = Printer(output if output is not None else sys.stdout)
        manager = Manager(printer=printer)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if settings.redis_url:
            env["REDIS_URL"] = settings.redis_url
        else:
            workspace = settings.agent_workspace
            embedded = EmbeddedRedis(
                workspace / ".harness" / "redis",
                persist=True,
                publish_url=embedded_url_file(workspace),
            ).start()
            env["REDIS_URL"] = embedded.url
            _announce(printer, f"embedded Redis on {embedded.url}, data in {embedded.data_dir}")
        for name, command in processes.items():
            manager.add_process(name, command, env=env)
        manager.loop()
        code = int(manager.returncode or 0)
        return 128 - code if code < 0 else code
    finally:
        # Redis first, while a signal still cannot cut the shutdown short.
        if embedded is not None:
            embedded.stop()
        for sig, handler in previous.items():
            if handler is not None:  # None: installed outside Python, cannot be restored
                signal.signal(sig, handler)


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> NoReturn:
    raise SystemExit(128 + signum)


def _announce(printer: Printer, text: str) -> None:
    printer.write(
        Message(
            type="line",
            data=text + "\n",
            time=datetime.datetime.now(),
            name=_SYSTEM,
            colour=None,
        )
    )
