"""How busy the whole machine's cores were over stretches of a measurement, from `/proc/stat`.

A wave of chats runs on every core at once (the fleet's processes, Redis, and the bench's own
driver and fakes); per-process CPU says who spent it, this says whether any core was left idle.
`MachineBusy` samples the first line of `/proc/stat` every `every` seconds in a thread of its
own; `busy(start, end)` is the share of all cores' time spent busy (not idle, not waiting for
I/O) between two `time.monotonic()` instants, and `cpu_s(start, end)` the busy core-seconds.
`cpu_s` uses the samples nearest each instant; `busy` the last sample at or before `start`
and the first at or after `end`, a stretch at most `every` wider on each side, so that even a
stretch shorter than `every` has ticks to share. Both are as precise as `every` (and the
kernel's clock tick, 10 ms).

    with MachineBusy() as machine:
        t0 = time.monotonic(); work(); t1 = time.monotonic()
    machine.busy(t0, t1)  # 0.0 .. 1.0
"""

from __future__ import annotations

import bisect
import os
import time

from bench.periodic import PeriodicSampler

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _busy_and_total() -> tuple[int, int]:
    """All cores' busy and total clock ticks since boot (`/proc/stat`'s first line)."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(n) for n in stat.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guests inside)
    return total - idle, total


class MachineBusy(PeriodicSampler):
    """Samples the machine's CPU ticks until the block ends (see the module)."""

    def __init__(self, every: float = 0.05) -> None:
        super().__init__(every, "machine-busy")
        self._at: list[float] = []
        self._ticks: list[tuple[int, int]] = []

    def sample(self) -> None:
        ticks = _busy_and_total()
        self._at.append(time.monotonic())
        self._ticks.append(ticks)

    def _nearest(self, instant: float) -> tuple[int, int]:
        i = bisect.bisect_left(self._at, instant)
        if i == len(self._at) or (i and instant - self._at[i - 1] < self._at[i] - instant):
            i -= 1
        return self._ticks[max(i, 0)]

    def cpu_s(self, start: float, end: float) -> float:
        """Busy core-seconds between `start` and `end` (monotonic), all cores summed."""
        return (self._nearest(end)[0] - self._nearest(start)[0]) / TICKS_PER_S

    def busy(self, start: float, end: float) -> float:
        """The share (0-1) of all cores' time spent busy from the last sample at or before
        `start` to the first at or after `end`; NaN when no tick passed between them (a
        stretch outside the block)."""
        first = max(bisect.bisect_right(self._at, start) - 1, 0)
        last = min(bisect.bisect_left(self._at, end), len(self._at) - 1)
        (busy0, total0), (busy1, total1) = self._ticks[first], self._ticks[last]
        return (busy1 - busy0) / (total1 - total0) if total1 > total0 else float("nan")
