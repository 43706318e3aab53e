"""The fleet's processes in the foreground: start each command, print its lines prefixed by
its name, and when one exits or a person asks, stop them all, each with its whole tree.

    manager = ProcessManager(Printer(sys.stdout))
    manager.add("web", "python -m harness.cli web", env)
    code = manager.loop()   # main thread: it handles SIGINT, SIGTERM and SIGHUP

Stopping, in one place: SIGTERM once to each process's group, SIGKILL once after `grace_s`
to the groups and to every descendant noted while it ran (`harness.fleet.process_tree`: children
in sessions of their own, which a group signal misses), then wait, at most `SETTLE_S`, until
they are gone. A second Ctrl-C or SIGTERM (or a second `stop(force=True)`) sends the SIGKILL
at once. A process counts as stopped when it exits, whoever still holds its output pipe.
When our output breaks (the reader of a pipe exited: EPIPE), nobody is watching: the lines
are dropped and the fleet stops as after Ctrl-C.

Replaces honcho's `Manager`, which waited for the output pipe to close (forever, when an
orphaned grandchild held it) while re-sending SIGKILL ten times a second, ignored signals once
stopping, and left its processes running when writing its output failed.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import FrameType
from typing import IO

from honcho.colour import get_colours
from honcho.printer import Message, Printer

from harness.fleet import process_tree
from harness.fleet.process_tree import Proc

log = logging.getLogger(__name__)

SYSTEM = "system"
STOP_GRACE_S = 5.0
"""How long processes get to stop on SIGTERM before SIGKILL."""
SETTLE_S = 3.0
"""How long after SIGKILL to wait for the processes to be gone before giving up on them."""
DRAIN_S = 1.0
"""How long after a process exits to wait for the rest of its output."""
_TICK_S = 0.1
_NOTE_EVERY_S = 0.5
_SIGNALS: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


@dataclass
class _Child:
    name: str
    command: str
    env: Mapping[str, str] | None
    colour: str | None
    popen: subprocess.Popen[bytes] | None = None
    code: int | None = None
    exited_at: float = 0.0
    eof: threading.Event = field(default_factory=threading.Event)
    reported: bool = False


class ProcessManager:
    """Runs named shell commands until one exits or a stop is asked; see the module doc.

    `add` before `loop`; `announce` and `stop` may be called from any thread. Not reusable:
    `loop` runs once.
    """

    def __init__(
        self, printer: Printer, *, grace_s: float = STOP_GRACE_S, quiet: bool = False
    ) -> None:
        self.printer = printer
        self.quiet = quiet
        """No `<name> started (pid=N)` lines: each process says itself when it is up."""
        self.printer.width = len(SYSTEM)
        self.grace_s = grace_s
        self.returncode: int | None = None
        """The first stopped process's exit code (negative: killed by that signal), or the
        code of the signal that asked to stop (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)."""
        self.output_broken = False
        """True once writing the output failed (its reader is gone)."""
        self._children: dict[str, _Child] = {}
        self._colours: Iterator[str] = get_colours()
        self._lines: queue.Queue[tuple[str, bytes | None]] = queue.Queue()
        self._stop_asked = threading.Event()
        self._force_asked = threading.Event()
        self._signals: list[int] = []
        self._noted: set[Proc] = set()
        self._noted_at = 0.0
        self._kill_at: float | None = None
        self._killed_at: float | None = None

    def add(self, name: str, command: str, env: Mapping[str, str] | None = None) -> None:
        """Declare a process: `command` runs under `sh -c` with `env` (None: ours)."""
        if name in self._children:
            raise ValueError(f"process names must be unique: {name!r}")
        self._children[name] = _Child(name, command, env, next(self._colours))
        self.printer.width = max(self.printer.width, len(name))

    def announce(self, text: str) -> None:
        """Print one `system` line, in order with the processes' output. Thread-safe."""
        self._lines.put((SYSTEM, text.encode() + b"\n"))

    def stop(self, *, force: bool = False) -> None:
        """Ask the loop to stop everything: SIGTERM, then SIGKILL after the grace (`force`:
        SIGKILL now). Thread-safe; returns at once."""
        if force:
            self._force_asked.set()
        self._stop_asked.set()

    def loop(self) -> int:
        """Start every process and run until all are stopped; returns `returncode`. Must run
        in the main thread; restores the signal handlers it replaced."""
        previous = {sig: signal.signal(sig, self._on_signal) for sig in _SIGNALS}
        try:
            for child in self._children.values():
                self._start(child)
            while not self._done():
                self._print_pending(timeout=_TICK_S)
                self._step()
            self._print_pending(timeout=0)
        finally:
            for sig, handler in previous.items():
                if handler is not None:  # None: installed outside Python, cannot be restored
                    signal.signal(sig, handler)
        return self.returncode if self.returncode is not None else 0

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Only flags here: the loop prints and signals, outside the handler. Asked again
        # while stopping (a second Ctrl-C, or one after a process exited): no more grace.
        self._signals.append(signum)
        self.stop(force=self._stop_asked.is_set())

    def _start(self, child: _Child) -> None:
        # A session of its own: Ctrl-C in the terminal reaches only us, and the group we
        # stop is the process's, however it forks.
        child.popen = subprocess.Popen(
            child.command, shell=True, env=child.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        if not self.quiet:
            self._system(f"{child.name} started (pid={child.popen.pid})")
        assert child.popen.stdout is not None
        reader = threading.Thread(
            target=self._read,
            args=(child, child.popen.stdout),
            name=f"output-{child.name}",
            daemon=True,  # an orphan may hold the pipe forever: never wait for this thread
        )
        reader.start()

    def _read(self, child: _Child, stream: IO[bytes]) -> None:
        try:
            for line in iter(stream.readline, b""):
                self._lines.put((child.name, line))
        except (OSError, ValueError):
            pass
        finally:
            stream.close()
            child.eof.set()

    def _step(self) -> None:
        now = time.monotonic()
        stopping = self._kill_at is not None
        for signum in self._signals[:]:
            self._signals.remove(signum)
            self._code(_SIGNALS.get(signum, 128 + signum))
            how = "killing the fleet" if stopping else "stopping the fleet (again to force)"
            self._system(f"{signal.Signals(signum).name} received: {how}")
            stopping = True
        self._note(now)
        for child in self._children.values():
            self._reap(child, now)
        if self._stop_asked.is_set() and self._kill_at is None:
            self._terminate(now)
        due = self._kill_at is not None and now >= self._kill_at
        if self._killed_at is None and (self._force_asked.is_set() or due or self._orphaned()):
            self._kill(now)

    def _note(self, now: float, *, force: bool = False) -> None:
        """Note every descendant of the running processes while they still have parents:
        now and then, and on every tick once stopping (a parent that stops may start
        something while it stops)."""
        if not force and self._kill_at is None and now < self._noted_at + _NOTE_EVERY_S:
            return
        self._noted_at = now
        self._noted = process_tree.living(self._noted)
        running = [child.popen.pid for child in self._running() if child.popen is not None]
        if running:
            self._noted |= process_tree.descendants(*running)

    def _reap(self, child: _Child, now: float) -> None:
        if child.popen is None or child.reported:
            return
        if child.code is None:
            code = child.popen.poll()
            if code is None:
                return
            child.code, child.exited_at = code, now
            self._code(code)
            self._stop_asked.set()
        # Its last lines first (an error saying why it stopped), unless something else
        # holds the pipe open.
        if child.eof.is_set() or now - child.exited_at >= DRAIN_S:
            self._print_pending(timeout=0)
            child.reported = True
            self._system(f"{child.name} stopped ({_exit_status(child.code)})")

    def _terminate(self, now: float) -> None:
        self._note(now, force=True)  # before the signal orphans them
        self._kill_at = now + self.grace_s
        self._signal_all(signal.SIGTERM)

    def _kill(self, now: float) -> None:
        self._kill_at = self._kill_at if self._kill_at is not None else now
        self._killed_at = now
        self._note(now, force=True)
        self._signal_all(signal.SIGKILL)
        groups = {c.popen.pid for c in self._children.values() if c.popen is not None}
        strays = sorted(
            (p for p in process_tree.living(self._noted) if process_tree.group(p) not in groups),
            key=lambda p: p.pid,
        )
        if strays:
            pids = ", ".join(str(p.pid) for p in strays)
            self._system(f"sending SIGKILL to what the processes started elsewhere: pid {pids}")
        for process in strays:
            process_tree.signal_process(process, signal.SIGKILL)

    def _signal_all(self, sig: signal.Signals) -> None:
        """`sig` once to the group of each process: to the groups of exited processes too,
        whose members may outlive their leader (the `sh -c` running the command)."""
        living = process_tree.living(self._noted)
        for child in self._children.values():
            if child.popen is None:
                continue
            members = child.code is None or any(
                process_tree.group(process) == child.popen.pid for process in living
            )
            if members:
                self._system(f"sending {sig.name} to {child.name} (pid {child.popen.pid})")
                process_tree.signal_group(child.popen.pid, sig)

    def _orphaned(self) -> bool:
        """True when every process has exited but something they started still runs."""
        return not self._running() and bool(process_tree.living(self._noted))

    def _done(self) -> bool:
        if self._running() or not all(c.reported for c in self._children.values()):
            return False
        survivors = process_tree.living(self._noted)
        if not survivors:
            return True
        if self._killed_at is not None and time.monotonic() - self._killed_at >= SETTLE_S:
            pids = ", ".join(str(p.pid) for p in sorted(survivors, key=lambda p: p.pid))
            self._system(f"still running after SIGKILL (stop them by hand): pid {pids}")
            return True
        return False

    def _running(self) -> list[_Child]:
        return [c for c in self._children.values() if c.popen is not None and c.code is None]

    def _code(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code

    def _print_pending(self, timeout: float) -> None:
        try:
            name, data = self._lines.get(timeout=timeout) if timeout else self._lines.get_nowait()
            while True:
                if data is not None:
                    self._write(name, data)
                name, data = self._lines.get_nowait()
        except queue.Empty:
            return

    def _system(self, text: str) -> None:
        self._write(SYSTEM, text.encode() + b"\n")

    def _write(self, name: str, data: bytes) -> None:
        if self.output_broken:
            return
        child = self._children.get(name)
        message = Message(
            type="line",
            data=data,
            time=datetime.datetime.now(),
            name=name,
            colour=child.colour if child is not None else None,
        )
        try:
            self.printer.write(message)
        except (OSError, ValueError) as exc:  # EPIPE, or a closed file: nobody reads us
            self.output_broken = True
            log.debug("fleet output failed (%s); stopping the fleet", exc)
            self._code(128 + signal.SIGPIPE)
            self._stop_asked.set()


def _exit_status(code: int | None) -> str:
    """How a process ended, as its stop line says it: `rc=N`, or the signal that ended it
    (`on SIGTERM`: a server that re-raises the SIGTERM it was stopped with, as uvicorn does,
    stopped as asked, and an `rc=-15` read like a failure)."""
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"on {signal.Signals(-code).name}"
    return f"rc={code}"
