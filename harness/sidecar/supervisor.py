"""`harness sidecar`: keep one child running the current code of `workspace/functions`.

The child is the trusted executor (`executor.py`), which runs the files in a function host
of its own (`host.py`); the supervisor, like the executor, never imports them.

Reloading replaces the process, never `importlib.reload`: on a change in the folder (watchdog:
inotify, or polling on a network mount, `SIDECAR_WATCH`, `watch_mode.py`),
after `SIDECAR_DEBOUNCE` seconds of quiet, the folder is validated in a fresh interpreter,
then a new child starts (importing everything fresh, helpers included), and only once it
consumes its queue is the old child stopped (SIGTERM, then SIGKILL after `STOP_GRACE_S`).
A run the old child had in flight resumes on the new code from its journal once its lease
expires, like after a crash.

Nothing waits idle: when a file changes, the interpreters of the next validation and of the
next executor (with its host) start at once and import the harness during the debounce, so
a reload costs the files' import; after it, only the running executor and its host remain
(a spare of each held 40-80 MB per process for as long as the folder did not change).

A child that fails to start, or dies, is started again with exponential backoff (1 s up to
60 s) without waiting for a file change; while a new child fails to start, the old one (if
any) keeps running.

Where no OS sandbox can confine the agent's functions (`sandbox.refusal`), the supervisor
starts nothing, removes the functions an earlier sidecar registered and idles, after one log
line saying why; `harness functions`, `harness doctor` and the write/edit check say it too.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

from watchdog.events import FileSystemEvent, FileSystemEventHandler

from harness.errors import ConfigurationError
from harness.runtime import get_runtime
from harness.runtime.banner import say_up
from harness.runtime.connection import resolve_redis_url
from harness.runtime.function_sources import FILE_SOURCE, replace_source
from harness.settings import Settings
from harness.sidecar.builtins import BUILTIN_IDS
from harness.sidecar.environment import (
    READY_FD_ENV,
    executor_environment,
    function_environment,
    python_command,
)
from harness.sidecar.sandbox import FunctionSandbox, describe_function_sandbox, refusal
from harness.sidecar.validate import Validator, encode_skip
from harness.sidecar.watch_mode import chosen_watch, observer_for

log = logging.getLogger("harness.sidecar")
READY_TIMEOUT_S = 60.0
STOP_GRACE_S = 5.0
FINAL_GRACE_S = 3.0
"""When the sidecar itself stops: shorter than the 5 s `harness up` gives it before SIGKILL
(`harness.fleet.process_manager.STOP_GRACE_S`), so its child is stopped by it, not orphaned."""
MAX_BACKOFF_S = 60.0
STABLE_AFTER_S = 30.0
_POLL_S = 0.05
EXECUTOR_MODULE = "harness.sidecar.executor"
BUILTINS_MODULE = "harness.sidecar.builtins"


class _Watcher(FileSystemEventHandler):
    """Notes the time of every change to a `.py` file in the folder."""

    def __init__(self, touched: threading.Event) -> None:
        self._touched = touched

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = (event.src_path, getattr(event, "dest_path", ""))
        if any(os.fsdecode(p).endswith(".py") for p in paths if p):
            self._touched.set()


@dataclass
class _Spawned:
    """A child process and the read end of its readiness pipe."""

    proc: subprocess.Popen[bytes]
    ready_fd: int

    def discard(self) -> None:
        os.close(self.ready_fd)
        _stop_child(self.proc, grace=1.0)


class Sidecar:
    """The supervisor. `run(stop)` blocks until `stop` is set, then stops the child."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.folder = settings.agent_workspace.resolve() / "functions"
        url = "" if settings.redis_sentinels.strip() else resolve_redis_url(settings)
        self.env = executor_environment(settings, url, os.environ)
        self.validator = Validator(
            self.folder,
            function_environment(settings, os.environ),
            sandbox=FunctionSandbox.from_settings(settings),
        )
        self._fleet_ids = reserved_ids()
        self._touched = threading.Event()
        self._spare: _Spawned | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._child_started = 0.0
        self._failures = 0
        self._retry_at = 0.0
        self._up = False  # said its one start-up line (`say_up`)

    @property
    def child_pid(self) -> int | None:
        """The current child's pid, or None when none runs."""
        return self._child.pid if self._child is not None else None

    def run(self, stop: threading.Event) -> None:
        """Load, watch and reload until `stop` is set. Never raises for what the files do."""
        self.folder.mkdir(parents=True, exist_ok=True)
        observer = observer_for(self.settings.sidecar_watch, self.folder)
        observer.schedule(_Watcher(self._touched), str(self.folder), recursive=True)
        observer.start()
        log.info("sidecar watching %s", self.folder)
        wanted, last_change = True, 0.0
        try:
            while not stop.is_set():
                if self._touched.is_set():
                    self._touched.clear()
                    wanted, last_change = True, time.monotonic()
                    self._retry_at = 0.0  # new code deserves a try at once
                    self._prepare()
                if self._child is not None and self._child.poll() is not None:
                    self._child_died(self._child.returncode)
                    wanted = True
                quiet = time.monotonic() - last_change >= self.settings.sidecar_debounce
                if wanted and quiet and time.monotonic() >= self._retry_at:
                    wanted = not self._reload(stop)
                stop.wait(_POLL_S)
        finally:
            observer.stop()
            self.validator.close()
            if self._spare is not None:
                self._spare.discard()
            if self._child is not None:
                _stop_child(self._child, grace=FINAL_GRACE_S)
            observer.join(timeout=5)

    def _prepare(self) -> None:
        """Start the next validator and executor now, so they warm while the debounce runs;
        each is a no-op when one already waits."""
        self.validator.prepare()
        if self._live_spare() is None:
            self._spare = self._spawn()

    def _live_spare(self) -> _Spawned | None:
        """The waiting executor, if any; one that died waiting is discarded."""
        if self._spare is not None and self._spare.proc.poll() is not None:
            self._spare.discard()
            self._spare = None
        return self._spare

    def _child_died(self, code: int) -> None:
        log.warning(
            "sidecar child %s exited with code %s; starting a new one", self.child_pid, code
        )
        self._child = None
        if time.monotonic() - self._child_started < STABLE_AFTER_S:
            self._backoff()
        else:
            self._failures = 0

    def _backoff(self) -> None:
        self._failures += 1
        delay = min(MAX_BACKOFF_S, 2.0 ** (self._failures - 1))
        self._retry_at = time.monotonic() + delay
        log.warning("sidecar: next attempt in %.0fs", delay)

    def _reload(self, stop: threading.Event) -> bool:
        """Validate, start a new child, stop the old one. False when the new child did not
        become ready (the old one, if any, is left running)."""
        started = time.monotonic()
        try:
            report = self.validator.validate(
                reserved=self._fleet_ids, timeout=self.settings.sidecar_validate_timeout
            )
        except ConfigurationError as exc:  # the sandbox refuses now (a private folder filled)
            log.error("sidecar: %s", exc)
            self._backoff()
            return False
        log.info("sidecar: validated functions/ in %.2fs", time.monotonic() - started)
        skip = {error.file: error for error in report.errors}
        child = self._start_child(encode_skip(skip), stop)
        if child is None:
            self._backoff()
            return False
        old, self._child, self._child_started = self._child, child, time.monotonic()
        if old is not None:
            threading.Thread(target=_stop_child, args=(old, STOP_GRACE_S), daemon=True).start()
        log.info(
            "sidecar child %d running %d function(s); %d file(s) skipped",
            child.pid, len(report.functions), len(report.errors),
        )  # fmt: skip
        if not self._up:
            self._up = True
            skipped = f", {len(report.errors)} file(s) skipped: `harness functions` says why"
            say_up(
                log, "sidecar ready: watching %s (%s), %d function(s)%s", self.folder,
                chosen_watch(self.settings.sidecar_watch, self.folder), len(report.functions),
                skipped if report.errors else "",
            )  # fmt: skip
        return True

    def _start_child(self, skip: str, stop: threading.Event) -> subprocess.Popen[bytes] | None:
        """Tell the spare `_prepare` started (or a new child) to load and wait until it
        consumes. None when it did not become ready."""
        spawned, self._spare = self._live_spare() or self._spawn(), None
        if spawned is None:
            return None
        try:
            assert spawned.proc.stdin is not None
            spawned.proc.stdin.write(skip.encode() + b"\n")
            spawned.proc.stdin.close()
            ready = _wait_ready(spawned.proc, spawned.ready_fd, stop)
        except OSError:  # it died before reading its orders
            ready = False
        if not ready:
            log.error(
                "sidecar child %d did not become ready (exit code %s)",
                spawned.proc.pid, spawned.proc.poll(),
            )  # fmt: skip
            spawned.discard()
            return None
        os.close(spawned.ready_fd)
        return spawned.proc

    def _spawn(self) -> _Spawned | None:
        read_fd, write_fd = os.pipe()
        env = {**self.env, READY_FD_ENV: str(write_fd)}
        try:
            # The executor imports no agent code and sandboxes its function host itself. It
            # works in `/`, so it reads no `.env`: not the project's, nor one the agent wrote.
            proc = subprocess.Popen(
                python_command(EXECUTOR_MODULE), env=env, cwd="/", pass_fds=(write_fd,),
                start_new_session=True, stdin=subprocess.PIPE,
            )  # fmt: skip
        except OSError as exc:
            log.error("cannot start a sidecar child: %s", exc)
            os.close(read_fd)
            return None
        finally:
            os.close(write_fd)
        return _Spawned(proc, read_fd)


def reserved_ids() -> frozenset[str]:
    """Ids no file may take: the fleet's built-ins and the sidecar's own. The fleet's are
    listed by a short-lived `python -m harness.sidecar.builtins` (trusted, like this process):
    importing the fleet's modules costs seconds and megabytes this long-lived supervisor would
    hold, and never happens in the children that run agent code. Never raises: when the list
    cannot be had, the sidecar's own ids (the children still refuse ids already in the
    trigger table)."""
    try:
        done = subprocess.run(
            python_command(BUILTINS_MODULE), capture_output=True, text=True, check=True,
            timeout=READY_TIMEOUT_S,
        )  # fmt: skip
        return frozenset(json.loads(done.stdout.splitlines()[-1])) | BUILTIN_IDS
    except subprocess.CalledProcessError as exc:
        why = exc.stderr.strip().splitlines()[-1:] or [f"exit code {exc.returncode}"]
        log.warning("cannot list the built-in functions (%s); relying on the trigger table", why[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        log.warning("cannot list the built-in functions (%s); relying on the trigger table", exc)
    return BUILTIN_IDS


def _wait_ready(child: subprocess.Popen[bytes], read_fd: int, stop: threading.Event) -> bool:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline and not stop.is_set():
        readable, _, _ = select.select([read_fd], [], [], 0.1)
        if readable:
            return os.read(read_fd, 64).startswith(b"ready")
        if child.poll() is not None:
            return False
    return False


def _stop_child(child: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the child's process group (Celery's warm shutdown), SIGKILL after `grace`."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            pass
        try:
            child.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


class SidecarThread:
    """The sidecar's supervisor (`serve`) on a thread of a worker process
    (`harness worker --with-sidecar`, as `harness up` starts it on one host): one interpreter,
    about 60 MB, fewer. What it starts (the validator, the sandboxed executor and its host) are
    processes as under `harness sidecar`; the supervisor never imports the agent's files
    either way. A `Companion` of the worker (`harness.runtime.worker`)."""

    note: str | None = None  # it says its own line once the functions load

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, runtime: object) -> None:
        """Start supervising (the worker's runtime is not needed: the sidecar finds Redis
        as its process would)."""
        self._thread = threading.Thread(
            target=serve, args=(self._settings, self._stop), name="sidecar", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = FINAL_GRACE_S + 10.0) -> None:
        """Stop supervising: its child is stopped as `harness sidecar`'s is on SIGTERM; wait
        for that at most `timeout` seconds. Safe when never started, and twice."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)


def run_sidecar(settings: Settings) -> None:
    """The `harness sidecar` process: `serve` until SIGINT or SIGTERM."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    serve(settings, stop)


def serve(settings: Settings, stop: threading.Event) -> None:
    """Supervise until `stop` is set. With `SIDECAR_ENABLED=false`, or where no OS sandbox
    can confine functions (`sandbox.refusal`, logged once), it unregisters the functions of
    earlier runs and idles (so a Procfile that lists it still runs)."""
    if not settings.sidecar_enabled:
        log.info("sidecar disabled (SIDECAR_ENABLED=false): functions/ is not loaded")
        _idle(stop)
        return
    sandbox = FunctionSandbox.from_settings(settings)
    why = refusal(sandbox, settings.agent_workspace)
    if why is not None:
        log.error("sidecar: the agent's functions do not run: %s", why)
        _idle(stop)
        return
    log.info("%s", describe_function_sandbox(sandbox))
    Sidecar(settings).run(stop)


def _idle(stop: threading.Event) -> None:
    _unregister_all()
    while not stop.wait(1.0):
        pass


def _unregister_all() -> None:
    """Remove the functions an earlier sidecar registered, so their events start no runs that
    nothing would ever run. Best effort: logged when Redis cannot be reached."""
    try:
        replace_source(get_runtime(), FILE_SOURCE, {}, [])
    except Exception as exc:  # Redis down or not configured: nothing to clean, or later
        log.warning("could not unregister the sidecar's functions: %s", exc)
