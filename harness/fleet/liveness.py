"""Liveness files: how an exec probe (`harness health --process NAME`) tells that a worker,
scheduler, sidecar or model gateway process is alive, without Redis and without an HTTP port.

Each of those processes runs a `LivenessFile` thread that touches `<HEALTH_DIR>/<name>.alive`
every few seconds while its check passes: the scheduler's check is that its loop made a pass
lately (`Pulse`), so a wedged loop stops the touches; the others' is that the process runs.
A process is alive only while the threads it cannot work without run too (`require_alive`:
the model gateway's thread with `MODEL_CALLS=gateway`, in a worker or in a process of its
own, whose death would leave every offloaded model call waiting while the process looks
healthy). `is_alive` is fresh when the file was touched within `HEALTH_MAX_AGE`. A Redis
outage touches nothing here, so it never restarts a pod: readiness is `/healthz`'s business.
Processes of one kind sharing a folder share the file (any live one keeps it fresh); in a
container each process has its own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.settings import Settings
from harness.state_dir import state_dir

log = logging.getLogger(__name__)

PROCESSES = ("worker", "scheduler", "sidecar", "gateway")

_required_lock = threading.Lock()
_required: dict[str, Callable[[], bool]] = {}


def require_alive(what: str, alive: Callable[[], bool]) -> None:
    """From now on this process is alive, for every `LivenessFile` it keeps, only while
    `alive()` is true as well (one that raises counts as false): a part it cannot work
    without, such as a thread of its own. `what` names it in the warning when it is not;
    requiring the same `what` again replaces the check."""
    with _required_lock:
        _required[what] = alive


def lift(what: str) -> None:
    """No longer require `what` (for a part stopped on purpose, and tests). Idempotent."""
    with _required_lock:
        _required.pop(what, None)


def not_alive() -> list[str]:
    """The required parts (`require_alive`) that are not alive now, by name. Never raises."""
    with _required_lock:
        required = list(_required.items())
    return [what for what, alive in required if not _holds(alive)]


def _holds(check: Callable[[], bool]) -> bool:
    try:
        return bool(check())
    except Exception:  # a check that cannot tell says "not alive"
        return False


def health_file(settings: Settings, process: str) -> Path:
    """The liveness file of `process` (one of `PROCESSES`): in `HEALTH_DIR`, by default
    `<state dir>/health`."""
    folder = settings.health_dir or state_dir(settings) / "health"
    return folder.expanduser().resolve() / f"{process}.alive"


def is_alive(path: Path, max_age: float, now: float | None = None) -> bool:
    """True when `path` was touched within `max_age` seconds of `now` (default: the wall
    clock). False when it is missing or unreadable. Never raises."""
    try:
        touched = path.stat().st_mtime
    except OSError:
        return False
    return (time.time() if now is None else now) - touched <= max_age


class Pulse:
    """When a loop last went round: the loop calls `beat` each pass; `fresh` says whether it
    did within `max_age` seconds. Thread-safe (one float, written whole)."""

    def __init__(self) -> None:
        self._last = time.monotonic()

    def beat(self) -> None:
        """The loop made a pass now."""
        self._last = time.monotonic()

    def fresh(self, max_age: float) -> bool:
        """True when the last pass was at most `max_age` seconds ago."""
        return time.monotonic() - self._last <= max_age


class LivenessFile:
    """A daemon thread touching `path` every `interval` seconds while `check()` is true and
    every part the process requires is alive (`require_alive`), from `start` to `stop` (which
    removes the file: a stopped process is not alive). A failed touch (a full disk) is logged
    and tried again; a raising check counts as false."""

    def __init__(
        self, path: Path, interval: float, check: Callable[[], bool] = lambda: True
    ) -> None:
        self.path, self._interval, self._check = path, interval, check
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="liveness", daemon=True)

    def start(self) -> None:
        """Touch once now, then keep touching."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._touch()
        self._thread.start()

    def stop(self) -> None:
        """Stop touching and remove the file. Idempotent."""
        self._stop.set()
        self.path.unlink(missing_ok=True)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._touch()

    def _touch(self) -> None:
        if not _holds(self._check):
            log.warning("liveness: %s not touched, the process's loop is stalled", self.path.name)
            return
        dead = not_alive()
        if dead:
            parts = ", ".join(dead)
            log.warning("liveness: %s not touched, %s not alive", self.path.name, parts)
            return
        try:
            self.path.touch()
        except OSError as exc:
            log.warning("liveness: cannot touch %s: %s", self.path, exc)


def liveness_for(settings: Settings, process: str, pulse: Pulse | None = None) -> LivenessFile:
    """The liveness file thread of `process`, touching every third of `HEALTH_MAX_AGE`; with
    `pulse`, only while the loop beat within `HEALTH_MAX_AGE`."""
    max_age = settings.health_max_age
    check = (lambda: pulse.fresh(max_age)) if pulse is not None else (lambda: True)
    return LivenessFile(health_file(settings, process), max_age / 3, check)
