"""Running the runtime without Celery: kicks are kept in memory and drained in this thread.

Like dramatiq's `StubBroker.join()`: deterministic, and exceptions surface in the test.
Used by the unit tests and by anyone testing their own functions.
"""

from __future__ import annotations

from collections.abc import Collection

import redis

from harness.runtime.bus_errors import on_bus
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry
from harness.runtime.instance import Runtime
from harness.runtime.keys import Keys
from harness.runtime.kicker import Kick, RecordingKicker
from harness.runtime.scheduler import reap_once


def drain(
    runtime: Runtime, *, max_kicks: int = 10_000, hold: Collection[str] = ()
) -> list[tuple[str, str]]:
    """Advance every pending kick, and the kicks those produce, until none is left.

    Also fires due timers (by the runtime's clock) after each round, and has the runtime's
    `call_servers` make the offloaded calls due when no kick is left. Kicks of the runs in
    `hold` are not advanced: they are back in the kicker's `pending`, in order, when drain
    returns (a test holding one run back while the rest go on, whether a think is made inline
    or offloaded). Returns (run_id, outcome) for each kick advanced. Raises `RuntimeError`
    when `max_kicks` is exceeded, which means something kicks itself forever.
    """
    kicker = runtime.kicker
    if not isinstance(kicker, RecordingKicker):
        raise TypeError("drain() needs a runtime whose kicker is a RecordingKicker")
    outcomes: list[tuple[str, str]] = []
    held: list[Kick] = []
    try:
        while True:
            while kicker.pending:
                kick = kicker.pending.popleft()
                if kick.run_id in hold:
                    held.append(kick)
                    continue
                outcomes.append((kick.run_id, advance(runtime, kick.run_id, kick.seq)))
                if len(outcomes) > max_kicks:
                    raise RuntimeError(f"more than {max_kicks} kicks: a run keeps kicking itself")
            reap_once(runtime)
            if not kicker.pending and not sum(serve() for serve in runtime.call_servers):
                return outcomes
    finally:
        kicker.pending.extendleft(reversed(held))


class DrainingKicker(RecordingKicker):
    """Runs every kicked run to the end before `kick` returns (nested kicks join the drain),
    so a publish in a test returns with its runs finished. Set `runtime` after building it."""

    def __init__(self) -> None:
        super().__init__()
        self.runtime: Runtime | None = None
        self._draining = False

    def kick(self, kick: Kick) -> None:
        """Remember the kick, then drain unless a drain is already running."""
        super().kick(kick)
        if self.runtime is None or self._draining:
            return
        self._draining = True
        try:
            drain(self.runtime)
        finally:
            self._draining = False

    async def kick_async(self, kick: Kick) -> None:
        """`kick`: the runs are drained inside the event loop, as a test wants."""
        self.kick(kick)


def local_runtime(url: str, prefix: str, registry: FunctionRegistry) -> Runtime:
    """A runtime on the Redis at `url`, under key prefix `prefix`, whose kicks wait for
    `drain`: a whole worker in this thread, beside (and invisible to) any fleet on that Redis,
    as `harness eval` runs each case. Registers `registry`'s functions. Free it with
    `forget_runtime`."""
    client = redis.Redis.from_url(url, decode_responses=True, socket_connect_timeout=5)
    runtime = Runtime(redis=client, kicker=RecordingKicker(), registry=registry, keys=Keys(prefix))
    runtime.register_functions()
    return runtime


@on_bus("forget a local runtime's keys")
def forget_runtime(runtime: Runtime) -> None:
    """Delete every key under the runtime's prefix and close its client. Must not be used on
    a prefix a fleet uses. Raises `BusUnavailableError` when Redis fails."""
    client = runtime.redis
    batch = list(client.scan_iter(match=f"{runtime.keys.prefix}:*", count=500))
    for start in range(0, len(batch), 500):
        client.delete(*batch[start : start + 500])
    client.close()
