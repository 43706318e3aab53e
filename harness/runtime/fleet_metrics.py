"""The fleet's numbers for `/metrics`, kept in Redis so that any web process reports the whole
fleet's: no worker serves metrics of its own and no scrape has to find every worker.

Three writers keep the counters, all Lua scripts: the run scripts (runs started and finished
per function, `keys.metrics_runs`), the reaper's (lease expiries and re-sent kicks,
`keys.metrics_reaper`), and `COMMIT`, with each step's own journal write (step durations per
function as histogram buckets and model tokens per model: `harness.runtime.step_counters`).
`read_fleet_metrics` reads them with the gauges (runs per status, queue depth, undelivered
replies, live processes) in one pipeline, a broker look-up per queue and one script per
offloaded-call service named (`harness.runtime.call_health`), bounded by the number of
functions and models, never by the number of runs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from harness.runtime.bus_errors import on_bus
from harness.runtime.call_health import CallsWaiting, calls_waiting
from harness.runtime.functions import DEFAULT_QUEUE
from harness.runtime.instance import Runtime
from harness.runtime.presence import live_members
from harness.runtime.run_index import STATUSES
from harness.runtime.step_counters import SEP as _SEP
from harness.runtime.step_counters import STEP_BUCKETS, TOKEN_KINDS

__all__ = [
    "STEP_BUCKETS", "TOKEN_KINDS", "FleetSnapshot", "StepHistogram", "read_fleet_metrics",
]  # fmt: skip


@dataclass
class StepHistogram:
    """One function's committed steps: `counts[i]` steps took at most `STEP_BUCKETS[i]`
    seconds and more than the bound before (the last slot: more than the largest bound);
    `sum_s` their total seconds."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(STEP_BUCKETS) + 1))
    sum_s: float = 0.0

    def cumulative(self) -> list[tuple[str, int]]:
        """Prometheus buckets: (`le`, steps at most that long), `+Inf` last."""
        total, out = 0, []
        for bound, count in zip((*map(str, STEP_BUCKETS), "+Inf"), self.counts, strict=True):
            total += count
            out.append((bound, total))
        return out


@dataclass
class FleetSnapshot:
    """What `read_fleet_metrics` read. Counters only grow (Redis keeps them with no expiry);
    the rest are gauges of now. `queue_depth` holds None for a queue the broker could not
    be asked about."""

    runs: dict[tuple[str, str], int] = field(default_factory=dict)
    reaper: dict[str, int] = field(default_factory=dict)
    steps: dict[str, StepHistogram] = field(default_factory=dict)
    tokens: dict[tuple[str, str], int] = field(default_factory=dict)
    runs_in_status: dict[str, int] = field(default_factory=dict)
    queue_depth: dict[str, int | None] = field(default_factory=dict)
    undelivered: int = 0
    live: dict[str, int] = field(default_factory=dict)
    calls: dict[str, CallsWaiting] = field(default_factory=dict)


@on_bus("read the fleet's metrics")
def read_fleet_metrics(runtime: Runtime, call_services: tuple[str, ...] = ()) -> FleetSnapshot:
    """Every number `/metrics` shows, read now, with the offloaded calls of each of
    `call_services` (the engine knows no service: the caller names them). Raises
    `BusUnavailableError` when Redis does not answer; a broker that cannot tell a queue's
    depth gives None for that queue."""
    keys = runtime.keys
    pipe = runtime.redis.pipeline(transaction=False)
    for key in (keys.metrics_runs, keys.metrics_reaper, keys.metrics_steps, keys.metrics_tokens):
        pipe.hgetall(key)
    for status in STATUSES:
        pipe.zcard(keys.runs_in_status(status))
    pipe.hlen(keys.undelivered())
    runs, reaper, steps, tokens, *rest = pipe.execute()
    snapshot = FleetSnapshot(
        runs=_pairs(runs),
        reaper={_text(k): int(v) for k, v in reaper.items()},
        steps=_histograms(steps),
        tokens=_pairs(tokens),
        runs_in_status=dict(zip(STATUSES, map(int, rest[:-1]), strict=True)),
        undelivered=int(rest[-1]),
    )
    queues = {DEFAULT_QUEUE, *(spec.queue for spec in runtime.triggers.specs())}
    snapshot.queue_depth = {q: runtime.kicker.backlog(q) for q in sorted(queues)}
    live: dict[str, int] = defaultdict(int)
    for member in live_members(runtime):
        live[member.role] += 1
    snapshot.live = dict(live)
    snapshot.calls = {service: calls_waiting(runtime, service) for service in call_services}
    return snapshot


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _pairs(raw: dict[bytes | str, bytes | str]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for key, value in raw.items():
        name, _, kind = _text(key).rpartition(_SEP)
        out[(name, kind)] = int(value)
    return out


def _histograms(raw: dict[bytes | str, bytes | str]) -> dict[str, StepHistogram]:
    out: dict[str, StepHistogram] = {}
    for (fn, slot), value in _pairs(raw).items():
        histogram = out.setdefault(fn, StepHistogram())
        if slot == "sum_ms":
            histogram.sum_s = value / 1000
        elif slot.isdigit() and int(slot) < len(histogram.counts):
            histogram.counts[int(slot)] += value
    return out
