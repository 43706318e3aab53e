"""What a reader made of workspace files, kept while the files are unchanged.

A turn builds its system prompt before every model call, and routes its message through the
roster, so without this it re-reads and re-parses the same unchanged files (the identity and
memory files, every skill's front matter, every agent file) on every turn. A reader keeps one
`Memo` and asks it for its value with a `Stamp` of the files the value is made of:

    stamp = files_stamp(workspace, ["SOUL.md", "USER.md"])
    text = memo.get(key, stamp, lambda: read_them(workspace))

`load` runs, exactly as without a memo, unless the value under `key` was loaded when the
files had this very stamp. What the memo returns is therefore what `load` would return now;
only the reading and parsing are skipped. Everything under the workspace is untrusted, so:

- A stamp is taken the way `harness.workspace_files` opens a file: each folder on the way
  with `O_NOFOLLOW` from the one before, the file itself with `lstat`. A link on the way, a
  link or anything but a regular file with one hard link where a file is named, or a link in
  a stamped folder gives no stamp (None): the reader loads afresh every time, and its
  loader refuses and warns as it always did. A missing file has a stamp (it is missing).
- A file's stamp is its identity and its change times: device, inode, size, `st_mtime_ns`
  and `st_ctime_ns`. The kernel sets the change time (ctime) on every write, rename, link
  or `utime` and no process can set it back; a replaced file has a new inode. So a stamp that
  matches is a file not written since.
- File systems keep time in ticks (a few ms, a second on some): two writes in the same tick
  of the same size would leave the same stamp. A stamp whose newest ctime is less than
  `SETTLE_NS` old is "unsettled", like git's racily clean index entries: its value is
  loaded but not kept, so the next call reads again, until the files have been quiet for
  that long. A turn reading a file the previous tool call wrote therefore always reads it.
- A folder's stamp (`folder_stamp`) is its entries by name, with each file's stamp: a file
  added, removed, renamed or written changes it. Its sub-folders are named, not stamped.

Values are kept per key, at most `max_entries` per memo, the least recently used dropped
first: a reader keyed by chat (a per-chat memory) stays bounded however many chats a fleet
serves. Nothing is written to disk; a process starts empty.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from harness.workspace_files import UnsafePathError, folder_fd, parts_of

T = TypeVar("T")

SETTLE_NS = 2_000_000_000
"""How long a file must go unwritten (by its ctime) before a value made from it is kept:
above the coarsest file system tick the fleet meets (1 s), twice over."""

FileId = tuple[int, ...]
"""One file's identity: (device, inode, size, mtime_ns, ctime_ns); `MISSING` for no file,
`FOLDER` for a folder in a folder's listing."""
MISSING: FileId = ()
FOLDER: FileId = (-1,)


@dataclass(frozen=True)
class Stamp:
    """The identity of some files at one moment (see the module); equal stamps mean the
    files were not written in between. `settled` is False when one of them changed less than
    `SETTLE_NS` before the stamp was taken: a value made from them must not be kept."""

    identity: tuple[object, ...]
    settled: bool

    @property
    def exists(self) -> bool:
        """False for the stamp of one file that is missing (`files_stamp` of one path)."""
        return self.identity != (MISSING,)


def files_stamp(root: Path, relatives: Iterable[str]) -> Stamp | None:
    """The stamp of the files `root/relative` in order (a missing one as missing), each
    folder on the way opened once and without following a link. None when one is not a
    regular file with a single hard link, or a link is on the way (`UnsafePathError`)."""
    now = time.time_ns()
    try:
        paths = [parts_of(relative) or ("",) for relative in relatives]
        found: dict[tuple[str, ...], FileId] = {}
        for folders, names in _by_folder(paths).items():
            try:
                with folder_fd(root, "/".join(folders)) as fd:
                    found |= {(*folders, name): _file_id(name, fd) for name in names}
            except (FileNotFoundError, NotADirectoryError):
                found |= {(*folders, name): MISSING for name in names}
    except (_Unstampable, UnsafePathError):
        return None
    ids = [found[parts] for parts in paths]
    return Stamp(tuple(ids), _settled(ids, now))


def folder_stamp(root: Path, relative: str = "") -> Stamp | None:
    """The stamp of the folder `root/relative`: each entry's name with its file's identity
    (a sub-folder by name only); a missing folder has one too. None when an entry is a link,
    a hard-linked file or a special file, or a link is on the way."""
    now = time.time_ns()
    try:
        with folder_fd(root, relative) as fd:
            entries = _listing(fd)
    except (FileNotFoundError, NotADirectoryError):
        return Stamp((MISSING,), settled=True)
    except (_Unstampable, UnsafePathError):
        return None
    return Stamp(tuple(entries), _settled([i for _, i in entries], now))


def joined(*stamps: Stamp | None) -> Stamp | None:
    """One stamp for several (None when any is None): equal when each of them is."""
    present = [s for s in stamps if s is not None]
    if len(present) < len(stamps):
        return None
    return Stamp(tuple(s.identity for s in present), all(s.settled for s in present))


def file_identity(info: os.stat_result) -> FileId | None:
    """The identity a stamp gives the file `info` (an `lstat` or `fstat`) describes:
    (device, inode, size, mtime_ns, ctime_ns); None when it is not plainly a file (not a
    regular file, or one with more than one hard link), whose values are never kept."""
    try:
        return _identity(info)
    except _Unstampable:
        return None


def settled_at(identity: FileId, now_ns: int) -> bool:
    """True when the file of `identity` last changed `SETTLE_NS` or more before `now_ns`
    (`time.time_ns()`): a value made from it may be kept on its identity alone."""
    return _settled([identity], now_ns)


class Memo(Generic[T]):
    """Values loaded from files, by key, kept while the files' stamp is the same; at most
    `max_entries`, the least recently used dropped first. Thread-safe; `load` runs outside
    the lock (two threads may both load once)."""

    def __init__(self, max_entries: int = 64) -> None:
        self.max_entries = max_entries
        self._kept: OrderedDict[Hashable, tuple[Stamp, T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, stamp: Stamp | None, load: Callable[[], T]) -> T:
        """The value `load()` gave when the files under `key` last had `stamp`, else
        `load()` now (kept when the stamp is settled). A None stamp always loads. What `load`
        raises propagates, and nothing is kept."""
        if stamp is not None:
            with self._lock:
                kept = self._kept.get(key)
                if kept is not None and kept[0] == stamp:
                    self._kept.move_to_end(key)
                    return kept[1]
        value = load()
        with self._lock:
            if stamp is None or not stamp.settled:
                self._kept.pop(key, None)
                return value
            self._kept[key] = (stamp, value)
            self._kept.move_to_end(key)
            while len(self._kept) > self.max_entries:
                self._kept.popitem(last=False)
        return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)


class _Unstampable(Exception):
    """A file that is not plainly a file: a value made from it is loaded every time."""


def _by_folder(paths: list[tuple[str, ...]]) -> dict[tuple[str, ...], list[str]]:
    grouped: dict[tuple[str, ...], list[str]] = {}
    for *folders, name in paths:
        grouped.setdefault(tuple(folders), []).append(name)
    return grouped


def _file_id(name: str, folder: int) -> FileId:
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    return _identity(info)


def _listing(folder: int) -> list[tuple[str, FileId]]:
    """The folder's entries with their identities, sorted by name. Raises `_Unstampable`
    also for an entry removed while it is listed: the next stamp will see the folder still."""
    with os.scandir(folder) as found:
        try:
            return sorted((e.name, _entry_id(e)) for e in found)
        except OSError:
            raise _Unstampable from None


def _entry_id(entry: os.DirEntry[str]) -> FileId:
    info = entry.stat(follow_symlinks=False)
    return FOLDER if stat.S_ISDIR(info.st_mode) else _identity(info)


def _identity(info: os.stat_result) -> FileId:
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        raise _Unstampable
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _settled(ids: list[FileId], now: int) -> bool:
    """True when every file of `ids` last changed `SETTLE_NS` or more before `now`."""
    return all(len(i) < 5 or i[4] <= now - SETTLE_NS for i in ids)
