"""The scheduler: the reaper (timers, dead leases, lost kicks) and cron.

Any number of schedulers may run; every action they take is claimed atomically in Redis. It
runs as a process of its own (`harness scheduler`) or on a thread of a worker
(`SchedulerThread`, `harness worker --with-scheduler`, as `harness up` starts it on one host).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from harness.errors import BusUnavailableError
from harness.runtime.banner import say_up
from harness.runtime.bus_errors import redis_errors
from harness.runtime.cron_ticks import fire_due_ticks
from harness.runtime.functions import DEFAULT_QUEUE
from harness.runtime.instance import Runtime
from harness.runtime.kicker import kick_all
from harness.runtime.presence import Heartbeat

log = logging.getLogger(__name__)


def idle_queues(runtime: Runtime) -> list[str]:
    """The queues of registered functions whose broker holds no kick now (or cannot say)."""
    queues = {DEFAULT_QUEUE, *(spec.queue for spec in runtime.triggers.specs())}
    return [q for q in sorted(queues) if not runtime.kicker.backlog(q)]


def reap_once(runtime: Runtime) -> int:
    """Fire due timers, kick runs whose lease expired, re-send kicks that were lost.

    Returns the number of kicks sent.
    """
    kicks = runtime.ledger.reap(
        runtime.now_ms(), int(runtime.lease_ttl * 1000), idle_queues(runtime)
    )
    kick_all(runtime.kicker, kicks)
    return len(kicks)


def trim_history(runtime: Runtime) -> None:
    """Forget run index entries older than the retention period (their records expired);
    the first time, index the runs created before the indexes by function, session and
    status existed."""
    runtime.run_index.build()
    runtime.run_index.trim(runtime.now_ms() - runtime.retention_s * 1000)


def run_scheduler(
    runtime: Runtime,
    interval: float,
    stop: threading.Event,
    on_pass: Callable[[], None] = lambda: None,
    *,
    announce: bool = True,
) -> None:
    """Loop until `stop` is set: reap, fire cron ticks, trim history. Survives Redis outages.
    Calls `on_pass` after every pass, failed or not (a liveness probe's sign of life).
    `announce`: say the process's one start-up line (`say_up`); a scheduler on a worker's
    thread is told in the worker's line instead."""
    if announce:
        say_up(log, "scheduler %s ticking every %gs", runtime.worker_id, interval)
    passes = 0
    while not stop.is_set():
        try:
            with redis_errors("run a scheduler pass"):
                reap_once(runtime)
                fire_due_ticks(runtime)
                if passes % 600 == 0:
                    trim_history(runtime)
                runtime.redis.hset(
                    runtime.keys.scheduler_heartbeat(), runtime.worker_id, runtime.now_ms()
                )
        except BusUnavailableError as exc:
            log.warning("scheduler pass failed (%s); retrying", exc)
        passes += 1
        on_pass()
        stop.wait(interval)
    log.info("scheduler %s stopped", runtime.worker_id)


class SchedulerThread:
    """The scheduler loop on a daemon thread of a process that does other work (a worker):
    on one host it saves the scheduler its own interpreter (about 60 MB). It is present in
    the presence set as a `scheduler` of its own (`presence.member_id`, `beside`), and calls
    `on_pass` after every pass as the process would."""

    def __init__(self, interval: float, on_pass: Callable[[], None] = lambda: None) -> None:
        self.interval = interval
        self._on_pass = on_pass
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._heartbeat: Heartbeat | None = None

    @property
    def note(self) -> str:
        """What the hosting process adds to its start-up line."""
        return f"scheduler every {self.interval:g}s"

    def start(self, runtime: Runtime) -> None:
        """Beat into the presence set and start the loop on `runtime`. Once only."""
        self._heartbeat = Heartbeat(runtime, "scheduler", beside=True)
        self._heartbeat.start()
        self._thread = threading.Thread(
            target=run_scheduler,
            args=(runtime, self.interval, self._stop, self._on_pass),
            kwargs={"announce": False},
            name="scheduler",
            daemon=True,
        )
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """End the loop (after its current pass, waiting at most `timeout` seconds) and
        leave the presence set. Safe to call when never started, and twice."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        heartbeat, self._heartbeat = self._heartbeat, None
        if heartbeat is not None:
            heartbeat.stop()
