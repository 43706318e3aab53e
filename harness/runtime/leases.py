"""Leases held by this process: renewed while their runs execute, handed back on shutdown.

A worker's `LeaseKeeper` renews the lease of each run it executes. When the worker is told to
stop (SIGTERM), `hand_back` releases every lease it holds at once: each run is queued and
kicked again, so another worker resumes it within about a second instead of after the lease
expires, and the stopping worker's execution is told to stop and can write nothing more.
"""

from __future__ import annotations

import logging
import threading

import redis

from harness.runtime.instance import Runtime
from harness.runtime.kicker import kick_all
from harness.runtime.steps import RunState

log = logging.getLogger("harness.run")

_held: dict[int, RunState] = {}
_held_lock = threading.Lock()


class LeaseKeeper:
    """Renews a run's lease every third of its TTL on a daemon thread until stopped.

    A refused renewal (someone else owns the run) or a cancel request is passed to the
    run's state, which sets its `abort` event so that an in-flight step can notice.
    """

    def __init__(self, state: RunState) -> None:
        self._state = state
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name=f"lease-{state.run_id}", daemon=True
        )

    def __enter__(self) -> LeaseKeeper:
        with _held_lock:
            _held[id(self)] = self._state
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with _held_lock:
            _held.pop(id(self), None)
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        s = self._state
        ttl_ms = int(s.runtime.lease_ttl * 1000)
        while not self._stop.wait(s.runtime.lease_ttl / 3):
            try:
                ok, cancel = s.runtime.ledger.renew(s.run_id, s.epoch, s.runtime.now_ms(), ttl_ms)
            except redis.RedisError:
                log.warning("could not renew the lease of run %s; will try again", s.run_id)
                continue
            if not ok:
                s.request_stop(lost=True)
                return
            if cancel:
                s.request_stop(cancel=cancel)


def hand_back(runtime: Runtime) -> int:
    """Release every lease this process holds on `runtime`: queue and kick each run again, and
    tell its execution to stop (its writes are refused from now on). From then on the runtime
    is `stopping`: kicks it still receives are passed on, not run. Returns how many runs were
    handed back. Never raises: a lease it cannot release expires as usual."""
    runtime.stopping.set()
    with _held_lock:
        states = [s for s in _held.values() if s.runtime is runtime]
    handed = 0
    for state in states:
        state.request_stop(lost=True)
        try:
            released, kicks = runtime.ledger.release(state.run_id, state.epoch, runtime.now_ms())
        except redis.RedisError as exc:
            log.warning("could not hand run %s back (%s); its lease will expire", state.run_id, exc)
            continue
        kick_all(runtime.kicker, kicks)
        handed += int(released)
    if handed:
        log.info("handed %d run(s) back for another worker to resume", handed)
    return handed
