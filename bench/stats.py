"""What the benchmarks share beyond `statistics`: a percentile of timings, and the CPU time of
server processes read from `/proc` (so a server's own cost is counted, not the client's)."""

from __future__ import annotations

import os
from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    """The value below which a fraction `q` (0 to 1) of `values` lies, by the nearest rank
    (no interpolation); `values` must not be empty."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user + system) the processes `pids` have used so far, from `/proc`."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat
    return total / tick


def process_tree(pid: int) -> list[int]:
    """`pid` and every process descended from it, from `/proc/<pid>/task/<tid>/children`."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").iterdir():
            pending += [int(child) for child in (task / "children").read_text().split()]
    return found


def listening_sockets(port: int) -> int:
    """How many TCP sockets listen on `port` (IPv4 and IPv6), from `/proc/net`: with
    SO_REUSEPORT, one per process that has bound it."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                count += 1
    return count
