"""The console's health page, as data: which fleet processes beat, how many kicks wait on
each queue, whether a scheduler and a sidecar run, the sidecar's load errors, the
undelivered replies, and the model calls waiting for a model gateway (and whether one is
alive to make them).

Read from the same records `/metrics` reads (`read_fleet_metrics`) and the same presence
beats `/readyz` and `harness functions` read (`live_members`): nothing is asked of a worker
directly, so the page answers even when every worker is busy.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.agent.model_calls import MODEL_SERVICE
from harness.runtime.call_health import CallsWaiting
from harness.runtime.fleet_metrics import read_fleet_metrics
from harness.runtime.function_sources import FILE_SOURCE, LoadError, load_errors
from harness.runtime.instance import Runtime
from harness.runtime.presence import Member, live_members


@dataclass(frozen=True)
class FleetHealth:
    """One look at the fleet. `queue_depth` holds None for a queue the broker could not be
    asked about; `now_ms` is when it was read (to show each beat's age); `model_calls` the
    model calls offloaded to the gateways (`MODEL_CALLS=gateway`)."""

    now_ms: int
    members: list[Member]
    queue_depth: dict[str, int | None]
    undelivered: int
    load_errors: list[LoadError]
    model_calls: CallsWaiting

    def alive(self, role: str) -> int:
        """How many processes of `role` beat recently."""
        return sum(1 for m in self.members if m.role == role)


def fleet_health(runtime: Runtime) -> FleetHealth:
    """Read the fleet's health now. Raises `BusUnavailableError` when Redis is down."""
    snapshot = read_fleet_metrics(runtime, (MODEL_SERVICE,))
    return FleetHealth(
        now_ms=runtime.now_ms(),
        members=live_members(runtime),
        queue_depth=snapshot.queue_depth,
        undelivered=snapshot.undelivered,
        load_errors=load_errors(runtime, FILE_SOURCE),
        model_calls=snapshot.calls[MODEL_SERVICE],
    )
