"""`/metrics`: the fleet's numbers (`harness.runtime.fleet_metrics`) in the Prometheus text
format, read from Redis at scrape time by a custom collector.

Every web process reports the same fleet-wide numbers: scrape one, or aggregate with `max`
(the dashboard does), never `sum` across web pods. Labels are function ids, model names,
queue names, run statuses and process roles: never a chat id, session key or secret. When
Redis does not answer, only `harness_redis_up 0` is reported.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from harness.agent.model_calls import MODEL_SERVICE
from harness.errors import BusUnavailableError
from harness.llm.pricing import known_cost_usd
from harness.llm.types import Usage
from harness.runtime.fleet_metrics import TOKEN_KINDS, FleetSnapshot, read_fleet_metrics
from harness.runtime.instance import Runtime

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_KIND_LABELS = {"in": "input", "out": "output", "cr": "cache_read", "cw": "cache_write"}


class FleetCollector:
    """A `prometheus_client` collector reading `read_fleet_metrics` on each `collect`. Never
    raises: a Redis outage is `harness_redis_up 0` and nothing else."""

    def __init__(self, runtime_factory: Callable[[], Runtime]) -> None:
        self._runtime_factory = runtime_factory

    def collect(self) -> Iterator[Metric]:
        """The metric families, built from one snapshot."""
        up = GaugeMetricFamily("harness_redis_up", "1 when Redis answered this scrape.")
        try:
            snapshot = read_fleet_metrics(self._runtime_factory(), (MODEL_SERVICE,))
        except BusUnavailableError as exc:
            log.warning("metrics: Redis unavailable (%s)", type(exc.__cause__ or exc).__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from _run_families(snapshot)
        yield from _model_families(snapshot)
        yield from _queue_families(snapshot)
        yield from _call_families(snapshot)


def render(runtime_factory: Callable[[], Runtime]) -> bytes:
    """The exposition text of one scrape (`CONTENT_TYPE`). Never raises on a Redis outage."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(runtime_factory))
    return generate_latest(registry)


def _run_families(s: FleetSnapshot) -> Iterator[Metric]:
    started = CounterMetricFamily(
        "harness_runs_started", "Runs created, per function.", labels=["function"]
    )
    finished = CounterMetricFamily(
        "harness_runs_finished",
        "Runs that ended, per function and status (completed, failed, cancelled).",
        labels=["function", "status"],
    )
    for (fn, kind), n in sorted(s.runs.items()):
        if kind == "started":
            started.add_metric([fn], n)
        else:
            finished.add_metric([fn, kind], n)
    steps = HistogramMetricFamily(
        "harness_step_duration_seconds",
        "Duration of each committed step try, per function.",
        labels=["function"],
    )
    for fn, histogram in sorted(s.steps.items()):
        steps.add_metric([fn], histogram.cumulative(), histogram.sum_s)
    in_status = GaugeMetricFamily(
        "harness_runs", "Runs now in each status (within the run retention).", labels=["status"]
    )
    for status, n in s.runs_in_status.items():
        in_status.add_metric([status], n)
    yield from (started, finished, steps, in_status)
    for name, what in (
        ("lease_expiries", "Run leases the reaper found expired (a worker died or stalled)."),
        ("kicks_resent", "Kicks the reaper sent again because the broker lost them."),
    ):
        counter = CounterMetricFamily(f"harness_{name}", what)
        counter.add_metric([], s.reaper.get(name, 0))
        yield counter


def _model_families(s: FleetSnapshot) -> Iterator[Metric]:
    tokens = CounterMetricFamily(
        "harness_model_tokens", "Model tokens, per model and kind.", labels=["model", "kind"]
    )
    calls = CounterMetricFamily("harness_model_calls", "Model calls, per model.", labels=["model"])
    cost = CounterMetricFamily(
        "harness_model_cost_usd",
        "List-price cost of the model tokens, per model (models with a known price only).",
        labels=["model"],
    )
    for model in sorted({model for model, _ in s.tokens}):
        counts = {kind: s.tokens.get((model, kind), 0) for kind in TOKEN_KINDS}
        for kind, n in counts.items():
            tokens.add_metric([model, _KIND_LABELS[kind]], n)
        calls.add_metric([model], s.tokens.get((model, "calls"), 0))
        usd = known_cost_usd(model, Usage(input_tokens=counts["in"], output_tokens=counts["out"],
                                          cache_read_tokens=counts["cr"],
                                          cache_write_tokens=counts["cw"]))  # fmt: skip
        if usd is not None:
            cost.add_metric([model], usd)
    yield from (tokens, calls, cost)


def _queue_families(s: FleetSnapshot) -> Iterator[Metric]:
    depth = GaugeMetricFamily(
        "harness_queue_depth", "Kicks waiting on the broker for a worker, per queue.",
        labels=["queue"],
    )  # fmt: skip
    for queue, n in s.queue_depth.items():
        if n is not None:
            depth.add_metric([queue], n)
    undelivered = GaugeMetricFamily(
        "harness_undelivered_replies", "Replies the platform refused, kept for redelivery."
    )
    undelivered.add_metric([], s.undelivered)
    live = GaugeMetricFamily(
        "harness_live_processes",
        "Fleet processes with a fresh presence beat, per role (worker, scheduler, sidecar).",
        labels=["role"],
    )
    for role in sorted({"worker", "scheduler", *s.live}):
        live.add_metric([role], s.live.get(role, 0))
    yield from (depth, undelivered, live)


def _call_families(s: FleetSnapshot) -> Iterator[Metric]:
    calls = GaugeMetricFamily(
        "harness_offloaded_calls",
        "Offloaded calls (model calls on the gateway path) per service and state: due (waiting "
        "for a gateway) or in_flight (a gateway makes it).",
        labels=["service", "state"],
    )
    oldest = GaugeMetricFamily(
        "harness_offloaded_call_oldest_due_seconds",
        "How long the oldest due offloaded call has waited since its run parked (0: none due).",
        labels=["service"],
    )
    gateways = GaugeMetricFamily(
        "harness_call_gateways_alive",
        "Gateways that beat lately, per service: 0 while calls are due means they wait for ever.",
        labels=["service"],
    )
    for service, waiting in sorted(s.calls.items()):
        calls.add_metric([service, "due"], waiting.due)
        calls.add_metric([service, "in_flight"], waiting.in_flight)
        oldest.add_metric([service], waiting.oldest_due_s or 0.0)
        gateways.add_metric([service], waiting.gateways)
    yield from (calls, oldest, gateways)
