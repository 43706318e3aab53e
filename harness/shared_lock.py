"""Locks on the files every host of a fleet shares: transcripts, memory logs, MEMORY.md's
history, the distillation's reads.

One seam for the writers that must exclude each other: `locked(path, fd, shared=...)`. With
`HARNESS_SHARED_ROOT` set (several hosts), the composition root `install`s Redis locks when it
builds the process's runtime (`harness.runtime.file_locks`), keyed by the file's path under
`HARNESS_SHARED_ROOT` (`lock_name`), so they hold across hosts: `flock` on a network file
system is only as good as the mount's lock manager (NFS with `nolock`, CIFS and most FUSE
mounts keep it local). A process that never built a runtime (a CLI command run offline) falls
back to `flock` on `fd`, which serialises this host's threads and processes only.

Writers keep writing with one `write` of whole lines or an atomic rename, so a Redis lock that
expired mid-write (a stalled process) lets another writer in but never leaves a torn file.
"""

from __future__ import annotations

import fcntl
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol


class FileLocks(Protocol):
    """Exclusive locks by name that hold across hosts."""

    def hold(self, name: str) -> AbstractContextManager[None]:
        """Hold the lock `name` for the `with` block. Raises `BusUnavailableError` when it
        cannot be taken in time or the lock service is unreachable."""
        ...


_installed: FileLocks | None = None
_root: Path | None = None
_guard = threading.Lock()


def install(locks: FileLocks | None, shared_root: Path | None = None) -> None:
    """Make `locks` what `locked` takes from now on in this process (None: `flock` again),
    naming each file by its path under `shared_root` (absolute when None or outside it)."""
    global _installed, _root
    with _guard:
        _installed = locks
        _root = shared_root.expanduser().resolve() if shared_root is not None else None


def installed() -> FileLocks | None:
    """The cross-host locks `locked` takes, or None (`flock`)."""
    with _guard:
        return _installed


def lock_name(path: Path, shared_root: Path | None) -> str:
    """The lock's name for `path`: its POSIX path relative to `shared_root` when it lies under
    it (hosts may mount the share at different places), else its absolute path."""
    absolute = path.expanduser().resolve()
    if shared_root is not None and absolute.is_relative_to(shared_root):
        return absolute.relative_to(shared_root).as_posix()
    return absolute.as_posix()


@contextmanager
def locked(path: Path, fd: int, *, shared: bool = False) -> Iterator[None]:
    """Hold the lock on file `path` for the `with` block: the installed cross-host lock
    (always exclusive), else `flock` on `fd` (shared or exclusive), released on exit. The
    caller still owns and closes `fd`."""
    with _guard:
        locks, root = _installed, _root
    if locks is not None:
        with locks.hold(lock_name(path, root)):
            yield
        return
    fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
