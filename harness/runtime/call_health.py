"""Whether a service's offloaded calls are being served (`harness.runtime.calls`): how many
wait, how long the oldest has, and how many gateways beat. Calls that wait while no gateway
beats wait for ever (a gateway's thread died, or a worker started without one): `/metrics` and
the console's health page read this to say so.
"""

from __future__ import annotations

from dataclasses import dataclass

import harness.runtime.scripts as scripts
from harness.runtime.bus_errors import on_bus
from harness.runtime.calls import GATEWAY_TTL_S
from harness.runtime.instance import Runtime

SCAN = 50
"""Offered calls (and expired leases) looked at for the oldest due call."""


@dataclass(frozen=True)
class CallsWaiting:
    """A service's offloaded calls now. `due`: offered or whose lease ran out (at most: a
    call dropped since is counted until a take passes over it); `in_flight`: held under a
    live lease; `oldest_due_s`: how long the oldest due call has waited since its run parked
    on it (None: none due; looked for among the first `SCAN` offered); `gateways`: gateways
    that beat within `GATEWAY_TTL_S`."""

    due: int = 0
    in_flight: int = 0
    oldest_due_s: float | None = None
    gateways: int = 0

    @property
    def stranded(self) -> bool:
        """Calls are due and no gateway is alive to make them: they wait for ever."""
        return self.due > 0 and self.gateways == 0


@on_bus("read the offloaded calls' health")
def calls_waiting(runtime: Runtime, service: str) -> CallsWaiting:
    """`service`'s offloaded calls now. Raises `BusUnavailableError` when Redis fails."""
    now = runtime.now_ms()
    script = scripts.load(runtime.redis, "call_waiting")
    args: list[str | int] = [runtime.keys.prefix, service, now, SCAN, int(GATEWAY_TTL_S * 1000)]
    due, in_flight, oldest, gateways = (int(v) for v in script(args=args))
    return CallsWaiting(
        due=due,
        in_flight=in_flight,
        oldest_due_s=None if oldest < 0 else max(0, now - oldest) / 1000,
        gateways=gateways,
    )
