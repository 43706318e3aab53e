"""Which processes a fleet process started, however deep, and signalling each of them once.

Every process of `harness up` runs in a process group of its own, but not everything it
starts stays in that group: the sidecar starts each child in a session of its own (so that it
can stop that child's group). When such a parent is killed, its children are orphaned (their
parent becomes init): a signal to the parent's group misses them, and they keep the fleet's
output pipe open. So the supervisor notes every descendant while it is still linked to its
parent (`descendants`, read from /proc), and stops what it noted.

A `Proc` is a pid together with its start time, so a pid the kernel reused for an unrelated
process is never signalled. Zombies count as gone: they hold no pipe and no port. Reading
/proc is Linux-only; elsewhere `descendants` finds nothing and only the groups are stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")


@dataclass(frozen=True)
class Proc:
    """One process: its pid and its start time (clock ticks after boot, from /proc)."""

    pid: int
    start: int


@dataclass(frozen=True)
class _Stat:
    ppid: int
    pgid: int
    state: str
    start: int


def _stat(pid: int) -> _Stat | None:
    """The parent, state and start time of `pid`, or None when it is gone or unreadable."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces or ")".
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return _Stat(
            ppid=int(fields[1]), pgid=int(fields[2]), state=fields[0], start=int(fields[19])
        )
    except (IndexError, ValueError):
        return None


def proc(pid: int) -> Proc | None:
    """`pid` as a `Proc`, or None when no such (non-zombie) process exists."""
    stat = _stat(pid)
    if stat is None or stat.state in ("Z", "X"):
        return None
    return Proc(pid, stat.start)


def descendants(*pids: int) -> set[Proc]:
    """Every living process below any of `pids` (children, their children, ...), at this
    moment, from one reading of /proc (a fleet notes all its processes' in one, not one per
    process: /proc holds every process of the machine). Empty where /proc cannot be read.
    Never raises."""
    try:
        entries = [int(entry.name) for entry in _PROC.iterdir() if entry.name.isdigit()]
    except OSError:
        return set()
    children: dict[int, list[Proc]] = {}
    for entry in entries:
        stat = _stat(entry)
        if stat is not None and stat.state not in ("Z", "X"):
            children.setdefault(stat.ppid, []).append(Proc(entry, stat.start))
    found: set[Proc] = set()
    frontier = list(pids)
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child.pid)
    return found


def alive(process: Proc) -> bool:
    """True while `process` (the same one: same start time) runs and is not a zombie."""
    return proc(process.pid) == process


def group(process: Proc) -> int | None:
    """The process group of `process`, or None when it is gone."""
    stat = _stat(process.pid)
    return stat.pgid if stat is not None and stat.start == process.start else None


def living(processes: Iterable[Proc]) -> set[Proc]:
    """The members of `processes` still alive."""
    return {process for process in processes if alive(process)}


def signal_process(process: Proc, sig: signal.Signals) -> None:
    """Send `sig` to `process` if it still runs (never to a reused pid). Never raises."""
    if alive(process):
        with contextlib.suppress(OSError):
            os.kill(process.pid, sig)


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send `sig` to every process of group `pgid`; nothing when the group is empty. Never
    raises."""
    with contextlib.suppress(OSError):
        os.killpg(pgid, sig)
