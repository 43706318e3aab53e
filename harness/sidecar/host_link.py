"""The executor's end of the function host: start it, load it, run executions on it, replace it.

`HostLink` keeps one host process (`python -m harness.sidecar.host`, in the OS sandbox, with
`function_environment`) and a thread reading its stdout, which hands each message to the
inbox of its execution. A host that ends (a run timed out and `end` was called, it crashed,
or it wrote something that is not the wire) is replaced at once by a new one given the same
`Load`; the executions it had in flight stop with `HostGone` and resume from their journals
once their leases expire, as after a crash. A replacement that cannot load calls `on_broken`
(the executor then exits, and the supervisor starts it again with backoff).

Two things the Landlock sandbox asks of whoever starts a host. Its supervisor asks for SIGTERM
when its parent *thread* ends (`PR_SET_PDEATHSIG` follows the thread that forked it), so the
thread that starts a replacement lives as long as that host. And it kills every process
under it (a function's `setsid` children included) on SIGTERM, so a host is ended with
SIGTERM to its process group's leader first, and SIGKILL to the group `KILL_GRACE_S` later.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Final

from harness.runtime.steps import LeaseLost
from harness.sidecar.wire import (
    FROM_HOST,
    MAX_LINE,
    Call,
    Load,
    Loaded,
    Outcome,
    ToHostMessage,
    encode,
)

log = logging.getLogger("harness.sidecar")
LOAD_TIMEOUT_S = 60.0
READY_WAIT_S = 60.0
KILL_GRACE_S = 1.0
GONE: Final = None  # what an inbox receives when its host has ended

Inbox = queue.Queue[Call | Outcome | None]


class HostGone(LeaseLost):
    """The function host ended under this execution: stop without writing anything (the run
    resumes from its journal once its lease expires)."""


class HostBroken(Exception):
    """A host could not be started or did not load in time."""


class _Process:
    """One host process, its writer, its reader thread and its executions' inboxes."""

    def __init__(self, proc: subprocess.Popen[bytes], on_end: Callable[[_Process], None]) -> None:
        self.proc = proc
        self.inboxes: dict[str, Inbox] = {}
        self.loaded: queue.Queue[Loaded | None] = queue.Queue()
        self.ended = threading.Event()
        self._on_end = on_end
        self._lock = threading.Lock()
        threading.Thread(target=self._read, name=f"host-{proc.pid}", daemon=True).start()

    def send(self, message: ToHostMessage) -> None:
        """Write one message; a host that is gone is noticed by the reader, not here."""
        assert self.proc.stdin is not None
        with self._lock, contextlib.suppress(OSError, ValueError):
            self.proc.stdin.write(encode(message))
            self.proc.stdin.flush()

    @contextlib.contextmanager
    def inbox(self, exec_id: str) -> Iterator[Inbox]:
        """An inbox for `exec_id` while the block runs; `HostGone` when the host has ended."""
        inbox: Inbox = queue.Queue()
        self.inboxes[exec_id] = inbox
        try:
            if self.ended.is_set():
                raise HostGone()
            yield inbox
        finally:
            self.inboxes.pop(exec_id, None)

    def _read(self) -> None:
        stdout: IO[bytes] | None = self.proc.stdout
        assert stdout is not None
        try:
            while line := stdout.readline(MAX_LINE):
                if not line.endswith(b"\n"):
                    raise ValueError(f"a line longer than {MAX_LINE} bytes")
                message = FROM_HOST.validate_json(line)
                if isinstance(message, Loaded):
                    self.loaded.put(message)
                elif (inbox := self.inboxes.get(message.exec)) is not None:
                    inbox.put(message)
        except ValueError as exc:  # pydantic's ValidationError is one
            log.error("function host %d broke the wire (%s); ending it", self.proc.pid, exc)
        finally:
            self.end()
            stdout.close()

    def end(self) -> None:
        """Kill the host (idempotent) and wake everything waiting on it."""
        if self.ended.is_set():
            return
        self.ended.set()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGTERM)
        self.loaded.put(None)
        for inbox in list(self.inboxes.values()):
            inbox.put(GONE)
        threading.Thread(target=_kill, args=(self.proc,), daemon=True).start()
        self._on_end(self)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL what is left of the host's process group once its leader (sent SIGTERM) has
    ended or `KILL_GRACE_S` has passed, and reap the leader. A group id is not reused while
    any member lives; with none left, the signal finds no group."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(KILL_GRACE_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()


class HostLink:
    """The executor's function host. Thread-safe."""

    def __init__(
        self,
        argv: list[str],
        env: Mapping[str, str],
        cwd: Path,
        on_broken: Callable[[str], None],
    ) -> None:
        self._argv, self._env, self._cwd = argv, dict(env), cwd
        self._on_broken = on_broken
        self._current: _Process | None = None
        self._order: Load | None = None
        self._ready = threading.Event()
        self._closing = False
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start a host, which imports the harness and waits for `load`. Raises `HostBroken`."""
        with self._lock:
            self._current = self._spawn()

    def load(self, order: Load) -> Loaded:
        """Have the started host import the folder; what it declared. Raises `HostBroken`
        when it dies or does not answer within `LOAD_TIMEOUT_S`."""
        with self._lock:
            current = self._current
        if current is None:
            raise HostBroken("no host was started")
        loaded = self._load(current, order)
        with self._lock:
            self._order = order  # from now on a host that ends is replaced
        if current.ended.is_set():
            raise HostBroken("the function host ended right after loading")
        self._ready.set()
        return loaded

    def channel(self) -> tuple[_Process, str]:
        """The loaded host to run an execution on, and a new execution id. Waits while a host
        is being replaced; raises `HostGone` when none is ready in time."""
        if not self._ready.wait(READY_WAIT_S):
            raise HostGone()
        with self._lock:
            current = self._current
        if current is None:
            raise HostGone()
        return current, uuid.uuid4().hex

    def end(self, why: str) -> None:
        """End the current host (a new one is started): the only way to stop code that does
        not return, since a thread cannot be killed."""
        with self._lock:
            current = self._current
        if current is not None:
            log.warning("ending function host %d: %s", current.proc.pid, why)
            current.end()

    def close(self) -> None:
        """End the host for good."""
        self._closing = True
        with self._lock:
            current = self._current
        if current is not None:
            current.end()

    def _spawn(self) -> _Process:
        try:
            proc = subprocess.Popen(
                self._argv, env=self._env, cwd=self._cwd, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise HostBroken(f"cannot start the function host: {exc}") from exc
        return _Process(proc, self._ended)

    def _load(self, process: _Process, order: Load) -> Loaded:
        process.send(order)
        try:
            loaded = process.loaded.get(timeout=LOAD_TIMEOUT_S)
        except queue.Empty:
            loaded = None
        if loaded is None:
            process.end()
            raise HostBroken(f"the function host did not load (exit code {process.proc.poll()})")
        return loaded

    def _ended(self, process: _Process) -> None:
        with self._lock:
            if process is not self._current or self._closing or self._order is None:
                return
            self._ready.clear()
        threading.Thread(target=self._replace, args=(process,), daemon=True).start()

    def _replace(self, old: _Process) -> None:
        """Start and load a new host; then stay until it ends (see the module docstring)."""
        log.warning("function host %d ended; starting a new one", old.proc.pid)
        try:
            new = self._spawn()
            with self._lock:
                self._current = new
                order = self._order
            assert order is not None
            self._load(new, order)
        except HostBroken as exc:
            self._on_broken(str(exc))
            return
        self._ready.set()
        new.ended.wait()
