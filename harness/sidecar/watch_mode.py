"""How the sidecar watches `workspace/functions`: inotify, or polling where inotify is blind.

inotify reports only changes made through this machine's kernel: on a network file system
(NFS, SMB/CIFS, CephFS, GlusterFS, Lustre, most FUSE mounts such as sshfs or s3fs) a function
another host writes raises no event here. `SIDECAR_WATCH=auto` therefore reads
`/proc/self/mountinfo`, finds the mount that holds the folder (the longest mount point that
contains it) and polls when its file-system type is a network one; `inotify` and `poll`
insist. Polling lists the folder every `POLL_INTERVAL_S` seconds (watchdog's
`PollingObserver`), which costs a `stat` per file.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

log = logging.getLogger("harness.sidecar")

WatchMode = Literal["auto", "inotify", "poll"]
MOUNTINFO = Path("/proc/self/mountinfo")
POLL_INTERVAL_S = 1.0
NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "glusterfs", "lustre", "gpfs",
     "afs", "ocfs2", "gfs2", "beegfs", "virtiofs", "fuse"}
)  # fmt: skip


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash in paths as octal escapes (\040).
    for code in ("040", "011", "012", "134"):
        field = field.replace("\\" + code, chr(int(code, 8)))
    return field


def filesystem_of(folder: Path, mountinfo: str) -> str | None:
    """The file-system type of the mount holding `folder` (absolute, resolved) in `mountinfo`
    (the text of /proc/self/mountinfo), or None when no line parses."""
    best: tuple[int, str] | None = None
    for line in mountinfo.splitlines():
        before, sep, after = line.partition(" - ")
        fields = before.split()
        if not sep or len(fields) < 5 or not after.split():
            continue
        point = Path(_unescape(fields[4]))
        if folder == point or folder.is_relative_to(point):
            depth = len(point.parts)
            if best is None or depth >= best[0]:
                best = (depth, after.split()[0])
    return best[1] if best is not None else None


def is_network_filesystem(fstype: str) -> bool:
    """True for a type whose changes other hosts can make: NFS, SMB, CephFS, FUSE (`fuse.*`)..."""
    return fstype in NETWORK_FILESYSTEMS or fstype.startswith("fuse.")


def chosen_watch(mode: WatchMode, folder: Path, mountinfo: str | None = None) -> str:
    """`inotify` or `poll` for `mode` and `folder`: `auto` polls on a network file system
    (`mountinfo` defaults to this process's; unreadable, inotify)."""
    if mode != "auto":
        return mode
    if mountinfo is None:
        try:
            mountinfo = MOUNTINFO.read_text()
        except OSError:
            return "inotify"
    fstype = filesystem_of(folder.resolve(), mountinfo)
    return "poll" if fstype is not None and is_network_filesystem(fstype) else "inotify"


def observer_for(mode: WatchMode, folder: Path) -> BaseObserver:
    """A not yet started watchdog observer for `folder`, as `chosen_watch` decides; logs it."""
    chosen = chosen_watch(mode, folder)
    log.info("sidecar watches %s with %s (SIDECAR_WATCH=%s)", folder, chosen, mode)
    if chosen == "poll":
        return PollingObserver(timeout=POLL_INTERVAL_S)
    return Observer()
