"""How many processes one bash command may have at once, and what enforces it.

RLIMIT_NPROC cannot bound a command: it counts every process of the uid (the worker's own
threads included) and the kernel ignores it for root. A pids cgroup can: each command gets a
child cgroup of its own with `pids.max`, which its first process joins before `exec` (so
everything it starts is counted from the start), and which is emptied (SIGKILL) and removed
when the command ends. `fork` beyond the limit fails with EAGAIN.

A usable place for those cgroups (`process_bound`, probed once per process) is, in order:

- cgroup v2: this process's own cgroup when its `cgroup.subtree_control` lists `pids` (the
  root cgroup), or, for a user other than root, its parent when that lists `pids` and the user
  may write there (a subtree delegated to it: root could write into a systemd slice that is
  not its own, so it never uses the parent);
- cgroup v1: this process's cgroup in the `pids` hierarchy, when we may write there (root,
  without a read-only `/sys/fs/cgroup`).

The probe creates a cgroup there and runs `true` in it. Where nothing works (a container with
`/sys/fs/cgroup` read-only, an unprivileged user without delegation), the bound is only the
RLIMIT_NPROC backstop and `process_bound().reason` says why.

Per-command cgroups are named `harness-bash-<worker pid>-<random>`; the probe removes empty
ones left by workers that died before cleaning up.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from harness.fleet.fleets import pid_alive

logger = logging.getLogger(__name__)

PREFIX = "harness-bash-"
_REMOVE_SECONDS = 5.0
_PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class ProcessBound:
    """What bounds a command's process count on this machine.

    `base` is the cgroup folder per-command pids cgroups are made in (`version` 1 or 2), or
    None when no pids cgroup is usable and only RLIMIT_NPROC is left; `reason` says why not.
    """

    base: Path | None
    version: int
    reason: str


class CommandCgroup:
    """One command's pids cgroup.

    `create` makes it with its `pids.max`; `join` (a preexec function: system calls only)
    moves the calling process into it; `remove` kills whatever is left in it and deletes it.
    """

    def __init__(self, path: Path, version: int) -> None:
        self.path = path
        self.version = version
        self._procs = os.fsencode(path / "cgroup.procs")

    @classmethod
    def create(cls, bound: ProcessBound, max_processes: int) -> CommandCgroup:
        """A new cgroup under `bound.base` allowing `max_processes` tasks (processes and
        threads). Raises OSError if it cannot be made; leaves nothing behind then."""
        if bound.base is None:
            raise OSError(errno.ENOENT, f"no pids cgroup: {bound.reason}")
        path = bound.base / f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        path.mkdir()
        try:
            (path / "pids.max").write_text(str(max_processes))
        except OSError:
            path.rmdir()
            raise
        return cls(path, bound.version)

    def join(self) -> None:
        """Move the calling process into the cgroup. For a forked child before `exec`: only
        system calls, no locks or allocation-heavy work. Raises OSError if refused."""
        fd = os.open(self._procs, os.O_WRONLY)
        try:
            os.write(fd, b"0")  # 0: the writing process itself, in v1 and v2
        finally:
            os.close(fd)

    def processes(self) -> list[int]:
        """Host pids of the processes in the cgroup now (empty once it is removed)."""
        try:
            text = (self.path / "cgroup.procs").read_text()
        except FileNotFoundError:
            return []
        return [int(line) for line in text.split()]

    def remove(self) -> bool:
        """SIGKILL every process in the cgroup until none is left, then delete it. Idempotent;
        returns False (and logs) if it could not be removed within a few seconds. Never raises.

        v2's `cgroup.kill` is used where the kernel has it; otherwise the pids are read and
        killed in a loop (bounded, since the cgroup allows only `pids.max` of them).
        """
        give_up = time.monotonic() + _REMOVE_SECONDS
        kill_file = self.path / "cgroup.kill"
        while True:
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > give_up:
                    logger.warning("could not remove the pids cgroup %s: %s", self.path, exc)
                    return False
            if self.version == 2 and kill_file.exists():
                _write_quietly(kill_file, "1")
            else:
                for pid in self.processes():
                    _kill(pid)
            time.sleep(0.005)  # let the killed ones exit (and be reaped) before trying again


@functools.lru_cache(maxsize=1)
def process_bound() -> ProcessBound:
    """Where per-command pids cgroups can be made here, probed once per process (see the
    module docstring). Never raises."""
    reasons = []
    for base, version in _candidates():
        bound = ProcessBound(base, version, "")
        problem = _probe(bound)
        if problem is None:
            _sweep(base)
            return bound
        reasons.append(f"{base}: {problem}")
    if not reasons:
        reasons.append("no cgroup v2 subtree with the pids controller, no cgroup v1 pids hierarchy")
    return ProcessBound(None, 0, "; ".join(reasons))


def _candidates() -> list[tuple[Path, int]]:
    """Cgroup folders that may hold per-command pids cgroups, v2 first."""
    own = _own_cgroups()
    found: list[tuple[Path, int]] = []
    for root, mount, fstype, options in _cgroup_mounts():
        if fstype == "cgroup2" and "" in own:
            folder = _inside(mount, root, own[""])
            delegated = folder != mount and os.geteuid() != 0
            candidates = [folder, folder.parent] if delegated else [folder]
            for candidate in candidates:
                try:
                    controllers = (candidate / "cgroup.subtree_control").read_text().split()
                except OSError:
                    continue
                if "pids" in controllers and candidate.is_relative_to(mount):
                    found.append((candidate, 2))
                    break
        elif fstype == "cgroup" and "pids" in options and "pids" in own:
            found.append((_inside(mount, root, own["pids"]), 1))
    return sorted(found, key=lambda pair: -pair[1])


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and under "" its v2 path."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def _cgroup_mounts() -> list[tuple[str, Path, str, set[str]]]:
    """(root inside the hierarchy, mount point, fstype, super options) of each cgroup mount."""
    mounts: list[tuple[str, Path, str, set[str]]] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return mounts
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            mounts.append((fields[3], Path(fields[4]), tail[0], set(tail[2].split(","))))
    return mounts


def _inside(mount: Path, root: str, path: str) -> Path:
    """The folder of cgroup `path` under a mount of the hierarchy's `root`."""
    if root != "/" and (path == root or path.startswith(root + "/")):
        path = path[len(root) :]
    return mount / path.lstrip("/")


def _probe(bound: ProcessBound) -> str | None:
    """Make a cgroup under `bound`, run `true` in it, remove it; None if all that worked."""
    try:
        cgroup = CommandCgroup.create(bound, 8)
    except OSError as exc:
        return f"cannot create a cgroup ({exc.strerror or exc})"
    problem = None
    try:
        done = subprocess.run(["true"], preexec_fn=cgroup.join, timeout=_PROBE_TIMEOUT)
        if done.returncode != 0:
            problem = f"true exited {done.returncode} in the cgroup"
    except (OSError, subprocess.SubprocessError) as exc:
        problem = f"cannot move a process into the cgroup ({exc})"
    if not cgroup.remove():
        problem = problem or "cannot remove the probe's cgroup"
    return problem


def _sweep(base: Path) -> None:
    """Remove empty per-command cgroups left under `base` by workers no longer running."""
    try:
        entries = list(base.iterdir())
    except OSError:
        return
    for entry in entries:
        owner = entry.name.removeprefix(PREFIX).split("-", 1)[0]
        if entry.name.startswith(PREFIX) and owner.isdigit() and not pid_alive(int(owner)):
            try:
                entry.rmdir()
            except OSError:
                continue  # still has processes: leave it to whoever can tell
            logger.info("removed the pids cgroup %s left by a stopped worker", entry)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _write_quietly(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError:
        pass
