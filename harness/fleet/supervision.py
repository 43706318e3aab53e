"""The fleet in the foreground once `harness up` has planned it: run its processes, say when it
is ready, and on the way out withdraw its record and stop its embedded Redis last.

    plan, redis = ...                  # harness.fleet.supervisor plans: settings, checks, Redis
    code = supervise(plan, redis=redis)

Planning a fleet takes the heavy imports (pydantic's settings, redis-py, the channel plug-ins,
the agent's workspace); supervising it takes none of them: the standard library, honcho's
printer and `harness.fleet.process_manager`. So `harness up` plans in the CLI's process and
then replaces it with `python -m harness.fleet.up`, which only supervises (`harness.fleet.up`);
`run_fleet` plans and supervises in one process (tests). Both run this one loop. A test keeps
this module's imports slim (tests/test_fleet_up.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import NoReturn, Protocol, TextIO

from honcho.printer import Printer

from harness.fleet.process_manager import ProcessManager
from harness.fleet.readiness import answers_ready, ready_line

_WATCH_INTERVAL_S = 0.5
REDIS_STOP_TIMEOUT_S = 10.0
"""How long the embedded Redis gets to shut down on SIGTERM before SIGKILL."""


@dataclass(frozen=True)
class FleetPlan:
    """What supervising a fleet needs once it is planned: the `processes` (name -> shell
    command, in order), what each gets in its environment on top of the supervisor's (`env`:
    REDIS_URL, the fleet id, ...; it may hold the Redis password, so it is printed nowhere),
    whether they start `quiet`, the `announcements` the fleet makes before they start, the web
    `port` whose `/readyz` to watch (None: no web process) for `fleet_id`, whether an
    `api_key` is set (for the `ready:` line), and the fleet `record` file to withdraw on
    return (None: a fleet using another's Redis keeps none)."""

    processes: dict[str, str]
    env: dict[str, str]
    quiet: bool
    announcements: tuple[str, ...]
    port: int | None
    fleet_id: str
    api_key: bool
    record: str | None


class RedisHandle(Protocol):
    """The embedded Redis a fleet stops last: `EmbeddedRedis`, or `RedisChild` after exec."""

    def running(self) -> bool:
        """True while the server has not exited."""

    def stop(self) -> None:
        """Shut the server down, its data persisted. Idempotent; never raises."""


class RedisChild:
    """The embedded `redis-server` a process started before it replaced itself with the
    supervisor: still this process's child (same pid), known by `pid` alone. `url_file` is
    where its URL was published (removed on `stop`)."""

    def __init__(self, pid: int, url_file: Path | None) -> None:
        self.pid = pid
        self.url_file = url_file
        self._exited = False

    def running(self) -> bool:
        """True until the server exits (it is reaped then). Never raises."""
        if not self._exited:
            try:
                self._exited = os.waitpid(self.pid, os.WNOHANG)[0] != 0
            except ChildProcessError:  # reaped already, or not ours: gone for us
                self._exited = True
        return not self._exited

    def stop(self) -> None:
        """Remove the URL file, then SIGTERM (Redis shuts down as on SHUTDOWN: the append-only
        file is flushed) and wait `REDIS_STOP_TIMEOUT_S`, then SIGKILL. Idempotent; never
        raises."""
        if self.url_file is not None:
            with contextlib.suppress(OSError):
                self.url_file.unlink(missing_ok=True)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not self.running():
                return
            with contextlib.suppress(OSError):
                os.kill(self.pid, sig)
            deadline = time.monotonic() + REDIS_STOP_TIMEOUT_S
            while self.running() and time.monotonic() < deadline:
                time.sleep(0.05)


def supervise(
    plan: FleetPlan, *, output: TextIO | None = None, redis: RedisHandle | None = None
) -> int:
    """Run `plan`'s processes (`ProcessManager`) until one exits or a signal arrives, their
    lines prefixed by name on `output` (default stdout); say `ready:` once `/readyz` on
    `plan.port` answers with `plan.fleet_id`; stop the fleet when `redis` dies. Then
    `stand_down`. Returns the exit code of the first process to stop (128 + signal number when
    killed by one; 130/143 after Ctrl-C/SIGTERM; 141 when the output broke; 1 when `redis`
    died). When stdout broke, it is pointed at /dev/null. Must run in the main thread; the
    signal handlers are as before on return."""
    previous = signal.signal(signal.SIGTERM, exit_on_sigterm)  # until the manager's own
    stop_watching = threading.Event()
    watcher: threading.Thread | None = None
    manager: ProcessManager | None = None
    try:
        printer = Printer(output if output is not None else sys.stdout)
        manager = ProcessManager(printer, quiet=plan.quiet)
        for line in plan.announcements:
            manager.announce(line)
        env = {**os.environ, **plan.env}
        for name, command in plan.processes.items():
            manager.add(name, command, env)
        watcher = threading.Thread(
            target=_watch,
            args=(manager, redis, plan.port, plan.fleet_id),
            kwargs={"stop": stop_watching, "api_key": plan.api_key},
            name="fleet-watch",
            daemon=True,
        )
        watcher.start()
        code = manager.loop()
        if redis is not None and not redis.running():
            return 1
        return 128 - code if code < 0 else code
    finally:
        stop_watching.set()
        if watcher is not None:
            watcher.join(timeout=5)
        stand_down(plan, redis)  # Redis before the handler goes: SIGTERM still unwinds
        if previous is not None:  # None: installed outside Python, cannot be restored
            signal.signal(signal.SIGTERM, previous)
        if manager is not None and manager.output_broken and output is None:
            _silence_stdout()


def stand_down(plan: FleetPlan, redis: RedisHandle | None) -> None:
    """Withdraw `plan`'s fleet record (when it still names this process), then stop `redis`.
    Idempotent; never raises."""
    if plan.record is not None:
        _withdraw(Path(plan.record), os.getpid())
    if redis is not None:
        redis.stop()


def _withdraw(record: Path, pid: int) -> None:
    """Remove the fleet record file unless it names another process (a fleet that started
    after ours). Reads only its `pid` (`harness.fleet.fleets.FleetRecord`), without the model:
    pydantic would add about 8 MB here."""
    try:
        written = json.loads(record.read_text())
    except (OSError, ValueError):
        written = None
    if isinstance(written, dict) and written.get("pid") not in (None, pid):
        return
    with contextlib.suppress(OSError):
        record.unlink(missing_ok=True)


def _watch(
    manager: ProcessManager,
    redis: RedisHandle | None,
    port: int | None,
    fleet_id: str,
    *,
    stop: threading.Event,
    api_key: bool,
) -> None:
    """Until `stop`: say once when our web process answers `/readyz` on `port` with 200
    (`ready_line`), and stop the fleet when the embedded Redis dies (nothing can work
    without it)."""
    ready = port is None
    while not stop.wait(_WATCH_INTERVAL_S):
        if redis is not None and not redis.running():
            manager.announce("the embedded Redis exited; stopping the fleet")
            manager.stop()
            return
        if not ready and port is not None and answers_ready(port, fleet_id):
            ready = True
            manager.announce(ready_line(port, api_key=api_key))


def _silence_stdout() -> None:
    """Point file descriptor 1 (and 2, when it is the same pipe) at /dev/null, so that the
    interpreter's last flush does not fail on a pipe nobody reads."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with contextlib.suppress(OSError):
            same = os.path.sameopenfile(1, 2)
            os.dup2(devnull, 1)
            if same:
                os.dup2(devnull, 2)
    finally:
        os.close(devnull)


def exit_on_sigterm(signum: int, frame: FrameType | None) -> NoReturn:
    """A SIGTERM handler that unwinds through `finally` (as Ctrl-C does), so that the embedded
    Redis, in a session of its own, is not left running."""
    raise SystemExit(128 + signum)
