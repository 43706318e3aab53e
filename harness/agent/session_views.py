"""The parsed lines of the session files this process read or wrote last, kept while each file
is what it was: a turn's second execution (the resume after its offloaded model call) and
every read after this process's own append parse no line a second time.

A `View` is a file's first `size` bytes, parsed. It is used again only when the file still
begins with those bytes, judged the way `harness.workspace_memo` judges a workspace file:

- The file's identity (device, inode, size, `st_mtime_ns`, `st_ctime_ns`, from `fstat` of
  the file opened without following a link) is the view's: the file was not written since.
  When it changed less than `SETTLE_NS` ago (a write in the same file system tick could keep
  the same stamp) its last `TAIL_BYTES` are read again and compared as well.
- Same device and inode, larger, and the view's last `TAIL_BYTES` still in place: something
  appended (this process's turn, another process's proactive message); only the bytes past
  `size` are read and parsed.
- Anything else (a compaction's atomic replace: a new inode; a truncated or rewritten file;
  an identity's fields that went back) reads the whole file again.

The fleet's own writers only append under the file's exclusive lock or replace it atomically
(`SessionStore`), and each of those changes the identity. What the comparison can miss is a
foreign program rewriting bytes in place, keeping the size, within one file system tick and
outside the last `TAIL_BYTES`: the same blind spot as a workspace stamp, narrowed by the tail.

An append by this process updates its view in place (`Views.appended`): the lines it wrote
are parsed from the bytes it wrote, with no read, when the file was exactly the view before
the write. Files that are not plainly files (not regular, or hard-linked: a replace in
progress) are read whole every time and never kept.

At most `VIEWS_KEPT` views and `VIEW_BYTES_KEPT` bytes of files' content are kept per
process (one `Views` for every store: `VIEWS`), the least recently used dropped first, so a
fleet serving any number of chats keeps a bounded number. Every method takes the caller's
word that it holds the file's lock (`harness.shared_lock`); the views themselves are guarded
by one lock of their own.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from harness.agent.session_lines import CompactionLine, SessionLine, parse_lines
from harness.workspace_memo import MISSING, FileId, file_identity, settled_at

VIEWS_KEPT = 512
"""Views a process keeps: more than the chats whose turns a worker has in flight at the
concurrency aims (200), so a turn's view outlives its model call."""
VIEW_BYTES_KEPT = 32 * 2**20
"""Bytes of session files a process keeps parsed, summed over its views."""
TAIL_BYTES = 4096
"""How much of a view's end is read again to check the file still holds it."""


@dataclass
class View:
    """The lines of a session file's first `size` bytes (`breaks` newlines among them; `tail`
    their last `TAIL_BYTES`) when the file had `identity`, with the index of its latest
    checkpoint (-1: none) and its idempotency keys."""

    identity: FileId = MISSING
    size: int = 0
    breaks: int = 0
    tail: bytes = b""
    lines: list[SessionLine | CompactionLine] = field(default_factory=list)
    checkpoint: int = -1
    idem: set[str] = field(default_factory=set)

    def extend(self, raw: bytes, name: str) -> None:
        """Parse `raw`, the file's bytes from `size` on, and add its lines, noting their
        idempotency keys and checkpoints (an unreadable line is skipped, with a warning)."""
        for line in parse_lines(raw, name, first=self.breaks + 1):
            if line.meta.get("idem"):
                self.idem.add(str(line.meta["idem"]))
            if isinstance(line, CompactionLine):
                self.idem.update(line.covered_idem)
                self.checkpoint = len(self.lines)
            self.lines.append(line)
        self.size += len(raw)
        self.breaks += raw.count(b"\n")
        self.tail = (self.tail + raw)[-TAIL_BYTES:]

    def snapshot(self) -> View:
        """A copy of the lines and the checkpoint, for a caller to read after the lock is
        released (the idempotency keys are left out)."""
        return View(self.identity, self.size, self.breaks, lines=list(self.lines),
                    checkpoint=self.checkpoint)  # fmt: skip


class Views:
    """The views of one process's session files by path, bounded (see the module)."""

    def __init__(self, max_views: int = VIEWS_KEPT, max_bytes: int = VIEW_BYTES_KEPT) -> None:
        self.max_views = max_views
        self.max_bytes = max_bytes
        self._kept: OrderedDict[Path, View] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def snapshot(self, path: Path) -> View:
        """The lines of `path` as the file is now (`View.snapshot`); an empty view when there
        is no file. Raises `OSError` when `path` is a link or cannot be read."""
        with self._lock:
            return self._current(path).snapshot()

    def holds_key(self, path: Path, key: str) -> bool:
        """Whether `path` as it is now holds idempotency key `key` (a line's or one its
        checkpoint covers). Raises `OSError` as `snapshot` does."""
        with self._lock:
            return key in self._current(path).idem

    def appended(self, path: Path, fd: int, before: os.stat_result, data: bytes) -> None:
        """Note that this process, holding the exclusive lock, just appended `data` through
        `fd` to `path`, which was `before` (its `fstat`) just before: a view of exactly that
        file takes the new lines in place; any other is dropped, to be read afresh."""
        with self._lock:
            view = self._drop(path)
            was, now = file_identity(before), file_identity(os.fstat(fd))
            if view is None and before.st_size == 0 and was is not None:
                view = View(identity=was)  # an empty file: what it wrote is all it holds
            if view is None or was is None or now is None or not _holds(view, was, fd):
                return
            if now[:2] != was[:2] or now[2] != was[2] + len(data):
                return  # someone else wrote too (no lock of theirs): read it afresh
            view.extend(data, path.name)
            view.identity = now
            self._keep(path, view)

    def forget(self, path: Path) -> None:
        """Drop the view of `path` (replaced or removed by this process)."""
        with self._lock:
            self._drop(path)

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)

    def _current(self, path: Path) -> View:
        """The kept view of `path` brought up to date (see the module); call with `_lock`."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            self._drop(path)
            return View()
        try:
            info = os.fstat(fd)
            identity = file_identity(info)
            view = self._drop(path)
            if identity is None or view is None or not _still_begins(view, identity, fd):
                view = View()
            if info.st_size > view.size:
                view.extend(_read(fd, view.size, info.st_size), path.name)
            if identity is not None and view.size == info.st_size:
                view.identity = identity
                self._keep(path, view)
            return view
        finally:
            os.close(fd)

    def _keep(self, path: Path, view: View) -> None:
        if view.size > self.max_bytes:
            return  # one session over the whole bound would push out every other
        self._kept[path] = view
        self._bytes += view.size
        while self._kept and (len(self._kept) > self.max_views or self._bytes > self.max_bytes):
            _, dropped = self._kept.popitem(last=False)
            self._bytes -= dropped.size

    def _drop(self, path: Path) -> View | None:
        view = self._kept.pop(path, None)
        if view is not None:
            self._bytes -= view.size
        return view


VIEWS = Views()
"""This process's views, shared by every `SessionStore`."""


def _still_begins(view: View, identity: FileId, fd: int) -> bool:
    """True when the file open as `fd`, of `identity`, still begins with the view's bytes."""
    if identity == view.identity:
        return _holds(view, identity, fd)
    grown = identity[:2] == view.identity[:2] and identity[2] > view.size
    return grown and _tail_in_place(view, fd)


def _holds(view: View, identity: FileId, fd: int) -> bool:
    """True when the file of `identity` (open as `fd`) is exactly the view's."""
    if identity != view.identity:
        return False
    return settled_at(identity, time.time_ns()) or _tail_in_place(view, fd)


def _tail_in_place(view: View, fd: int) -> bool:
    return os.pread(fd, len(view.tail), view.size - len(view.tail)) == view.tail


def _read(fd: int, start: int, end: int) -> bytes:
    """The file's bytes from `start` to `end` (fewer if it is shorter now)."""
    chunks = []
    while start < end:
        chunk = os.pread(fd, end - start, start)
        if not chunk:
            break
        chunks.append(chunk)
        start += len(chunk)
    return b"".join(chunks)
