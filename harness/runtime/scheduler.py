"""The scheduler process: the reaper (timers, dead leases, lost kicks) and cron.

Any number of schedulers may run; every action they take is claimed atomically in Redis.
"""

from __future__ import annotations

import logging
import threading

import redis

from harness.runtime.cron_ticks import fire_due_ticks
from harness.runtime.instance import Runtime
from harness.runtime.kicker import kick_all

log = logging.getLogger(__name__)
STALE_KICK_MS = 3_000


def reap_once(runtime: Runtime, *, stale_ms: int = STALE_KICK_MS) -> int:
    """Fire due timers, re-kick runs whose lease expired and runs whose kick was lost.

    Returns the number of kicks sent.
    """
    kicks = runtime.ledger.reap(runtime.now_ms(), int(runtime.lease_ttl * 1000), stale_ms)
    kick_all(runtime.kicker, kicks)
    return len(kicks)


def trim_history(runtime: Runtime) -> None:
    """Forget run index entries older than the retention period (their records expired)."""
    cutoff = runtime.now_ms() - runtime.retention_s * 1000
    runtime.redis.zremrangebyscore(runtime.keys.runs, "-inf", cutoff)


def run_scheduler(runtime: Runtime, interval: float, stop: threading.Event) -> None:
    """Loop until `stop` is set: reap, fire cron ticks, trim history. Survives Redis outages."""
    log.info("scheduler %s started (every %.1fs)", runtime.worker_id, interval)
    passes = 0
    while not stop.is_set():
        try:
            reap_once(runtime)
            fire_due_ticks(runtime)
            if passes % 600 == 0:
                trim_history(runtime)
            runtime.redis.hset(
                runtime.keys.scheduler_heartbeat(), runtime.worker_id, runtime.now_ms()
            )
        except redis.RedisError as exc:
            log.warning("scheduler pass failed (%s); retrying", exc)
        passes += 1
        stop.wait(interval)
    log.info("scheduler %s stopped", runtime.worker_id)
