"""Leases held by this process: renewed while their runs execute, handed back on shutdown.

A worker's `LeaseKeeper` renews the lease of each run it executes. When the worker is told to
stop (SIGTERM), `hand_back` hands back every run it executes: each is queued and kicked
again, so another worker resumes it within about a second instead of after the lease
expires, and the stopping worker's execution is told to stop and can write nothing more.
Each run is released by its own execution, at its next step boundary (`release_run`): a
step in flight (a reply being posted) is given `HAND_BACK_GRACE` to end and be recorded
under the lease first, since a run released at once would have its step done again by the
next worker while this one still did it (the reply posted twice). A step still running
after the grace is told to stop (its result is then not recorded), and its run is released
only once the step has ended; its lease is renewed meanwhile, so no other worker starts the
step while this one still runs it (a batch of steps, `run_all`, counts as a step in flight).
A worker killed before that leaves the lease to expire, as a crash does.
"""

from __future__ import annotations

import logging
import threading
import time

from harness.errors import BusUnavailableError
from harness.runtime.instance import Runtime
from harness.runtime.kicker import kick_all
from harness.runtime.run_state import RunState

log = logging.getLogger("harness.run")

HAND_BACK_GRACE = 2.0
"""Seconds a stopping worker waits for its runs' steps in flight to end and be recorded
before it tells those still running to stop, as a cancel does (their runs are released once
they have ended, never before)."""
_held: dict[int, RunState] = {}
_held_lock = threading.Lock()


class LeaseKeeper:
    """Keeps a run's lease while its execution runs (a context manager): the process's one
    renewer thread renews it every third of its TTL until the block exits.

    A refused renewal (someone else owns the run) or a cancel request is passed to the
    run's state, which sets its `abort` event so that an in-flight step can notice.
    """

    def __init__(self, state: RunState) -> None:
        self._state = state

    def __enter__(self) -> LeaseKeeper:
        with _held_lock:
            _held[id(self)] = self._state
        _RENEWER.add(id(self), self._state)
        return self

    def __exit__(self, *exc: object) -> None:
        _RENEWER.remove(id(self))
        with _held_lock:
            _held.pop(id(self), None)


class _Renewer:
    """One daemon thread renewing every lease this process keeps, each a third of its TTL
    after the last: a run costs no thread of its own to start and join. A renewal waits at
    most the Redis client's socket timeout, well within the two thirds of a TTL left."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._due: dict[int, tuple[float, RunState]] = {}
        self._thread: threading.Thread | None = None

    def add(self, key: int, state: RunState) -> None:
        """Renew `state`'s lease from a third of its TTL from now until `remove(key)`."""
        with self._changed:
            self._due[key] = (time.monotonic() + state.runtime.lease_ttl / 3, state)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="leases", daemon=True)
                self._thread.start()
            self._changed.notify()

    def remove(self, key: int) -> None:
        """Stop renewing; a renewal already under way may still finish."""
        with self._changed:
            self._due.pop(key, None)

    def _loop(self) -> None:
        while True:
            with self._changed:
                now = time.monotonic()
                due = [(k, s) for k, (at, s) in self._due.items() if at <= now]
                for key, state in due:
                    self._due[key] = (now + state.runtime.lease_ttl / 3, state)
                if not due:
                    first = min((at for at, _ in self._due.values()), default=None)
                    self._changed.wait(None if first is None else first - now)
                    continue
            for key, state in due:
                if not _renew(state):
                    self.remove(key)


def _renew(s: RunState) -> bool:
    """Renew one lease; False when it is lost (nothing more to renew)."""
    ttl_ms = int(s.runtime.lease_ttl * 1000)
    now = s.runtime.now_ms()
    try:
        ok, cancel = s.runtime.ledger.renew(s.run_id, s.epoch, now, ttl_ms)
    except BusUnavailableError:
        log.warning("could not renew the lease of run %s; will try again", s.run_id)
        return True
    if not ok:
        s.request_stop(lost=True)
        return False
    s.lease_until_ms = now + ttl_ms  # the steps' boundary need not renew it again
    if cancel:
        s.request_stop(cancel=cancel)
    return True


_RENEWER = _Renewer()


def hand_back(runtime: Runtime, grace: float = HAND_BACK_GRACE) -> int:
    """Hand every run this process executes on `runtime` back for another worker to resume
    now. Each execution is told to stop at its next step boundary, where it releases its
    lease (`release_run`, from the executor): the run is queued and kicked again. A step in
    flight is given up to `grace` seconds to end and be recorded under the lease; one still
    running then is told to stop too (its result is not recorded), and its run is released
    only once it has ended, so the step never runs on two workers at once. From the start the
    runtime is `stopping`: kicks it still receives are passed on, not run. Returns how many
    runs were handed back or will be as their executions unwind (a run that finished or
    parked meanwhile is not counted). Never raises: a lease that cannot be released expires
    as usual."""
    runtime.stopping.set()
    with _held_lock:
        states = [s for s in _held.values() if s.runtime is runtime]
    for state in states:
        state.handing_back = True
    _await_steps(states, time.monotonic() + grace)
    handing = 0
    for state in states:
        if _held_here(state):
            if _in_step(state):
                log.warning(
                    "run %s: a step still runs after %.0f s; it is told to stop, and the run "
                    "is handed back when it ends", state.run_id, grace,
                )  # fmt: skip
            state.request_stop(lost=True)
            handing += 1
        elif state.handed_back:
            handing += 1
    if handing:
        log.info("handing %d run(s) back for other workers to resume", handing)
    return handing


def release_run(state: RunState) -> bool:
    """Give up `state`'s lease for another worker to resume the run now: queued and kicked
    again. Fenced by the execution's epoch, so a run another worker (or an earlier release)
    already took is left alone: False then, and when Redis fails (the lease expires as
    usual, one warning line). Never raises."""
    runtime = state.runtime
    try:
        released, kicks = runtime.ledger.release(state.run_id, state.epoch, runtime.now_ms())
    except BusUnavailableError as exc:
        log.warning("could not hand run %s back (%s); its lease will expire", state.run_id, exc)
        return False
    kick_all(runtime.kicker, kicks)
    return released


def _await_steps(states: list[RunState], deadline: float) -> None:
    """Wait until none of `states` is executing a step (`_in_step`), or `deadline`."""
    while time.monotonic() < deadline:
        if not any(_in_step(s) for s in states):
            return
        time.sleep(0.01)


def _held_here(state: RunState) -> bool:
    """Whether `state`'s execution still runs here (inside its `LeaseKeeper`)."""
    with _held_lock:
        return any(s is state for s in _held.values())


def _in_step(state: RunState) -> bool:
    """Whether `state`'s execution still runs here and is running a step or a batch."""
    return _held_here(state) and bool(state.running[0] or state.batches)
