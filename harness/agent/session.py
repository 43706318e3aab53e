"""The session store: one JSONL file per conversation, holding everything that happened.

`<root>/sessions/<safe-key>-<hash>.jsonl` (the root is the private state folder, outside the
workspace: see `harness.agent.deps.private_folder`) keeps every user message, every assistant
message with its tool calls, and every tool message with its results, one `Line` per line, so
the next turn and a resumed run see the real transcript. A `CompactionLine` marks a checkpoint:
the model sees its summary and the lines after it. Files are only ever appended to or
atomically replaced, and a replaced file is first kept under `sessions/archive/`, never
destroyed.

Writers and readers hold the file's lock (`harness.shared_lock.locked`): a Redis lock that
holds across the hosts sharing the state folder (`HARNESS_SHARED_ROOT` set), else an
exclusive `flock` on `<file>.lock` for writers and a shared one for readers, which serialises
threads and processes on one machine only.

The process keeps the parsed lines of the sessions it read or wrote last
(`harness.agent.session_views`), used again while a file is what it was and brought up to
date by parsing only the bytes appended since, so the cost of a turn does not grow with the
session's length and a turn's second execution parses nothing the first already did.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from harness.agent.session_lines import LINE_ADAPTER, CompactionLine, Line, SessionLine
from harness.agent.session_views import VIEWS, View
from harness.file_writes import wrote
from harness.llm.types import Message
from harness.shared_lock import locked

__all__ = [
    "LINE_ADAPTER",
    "CompactionLine",
    "Line",
    "SessionLine",
    "SessionStore",
    "messages_of",
    "summary_message",
]

SUMMARY_HEADER = "[Conversation summary]\n"
COVERED_IDEM_LIMIT = 1000
AGENTS_DIR = "agents"  # under sessions/: a folder per named agent
NETWORKS_DIR = "networks"  # under sessions/: a folder per network a chat is bound to
_AGENT_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")


def summary_message(summary: str) -> Message:
    """The user message that carries a checkpoint summary to the model."""
    return Message.user(SUMMARY_HEADER + summary)


def messages_of(lines: Sequence[SessionLine | CompactionLine]) -> list[Message]:
    """The messages the model should see in `lines`: from the latest checkpoint on.

    A checkpoint becomes `summary_message(summary)`, followed by the messages after it.
    A proactive message written while a tool call awaited its result (a sub-agent answered
    mid-turn) comes after that result, so it never splits a call from its answer. Otherwise the
    result is the stored transcript as is; run `transcript.repair` before sending it.
    """
    start = 0
    for i in range(len(lines) - 1, -1, -1):
        if isinstance(lines[i], CompactionLine):
            start = i
            break
    out: list[Message] = []
    held: list[Message] = []  # proactive messages waiting for a tool cycle to close
    for line in lines[start:]:
        if isinstance(line, CompactionLine):
            out.append(summary_message(line.summary))
            continue
        message = line.message
        if line.proactive and (held or (out and out[-1].tool_calls)):
            held.append(message)
            continue
        if held and message.role != "tool":
            out.extend(held)
            held.clear()
        out.append(message)
        if held and message.role == "tool":
            out.extend(held)
            held.clear()
    out.extend(held)
    return out


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    # One write call in practice; the loop only guards against a short write.
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class SessionStore:
    """Session files under `<root>/sessions/` (a named agent's: see `for_agent`). Safe to share
    between threads and processes.

    Methods create the directories they need. Reads never fail on a damaged line: it is logged
    and skipped.
    """

    def __init__(self, root: Path, *, folder: Path | None = None) -> None:
        self.dir = folder or root / "sessions"
        self.archive_dir = self.dir / "archive"
        self._scopes_lock = threading.Lock()
        self._scopes: dict[Path, SessionStore] = {}

    def for_agent(self, name: str) -> SessionStore:
        """The store of named agent `name`'s conversations, `sessions/agents/<name>/`: its
        conversation in a chat is its own, under the chat's session key. The default agent's
        stay directly in `sessions/`. One store per name. Raises `ValueError` for a name that
        is not an agent's (`roster.spec.NAME_PATTERN`)."""
        return self._scoped(AGENTS_DIR, name)

    def for_network(self, name: str) -> SessionStore:
        """The store of network `name`'s conversations with the chats bound to it,
        `sessions/networks/<name>/`, apart from every agent's. One store per name; raises
        `ValueError` for a name that is not a network's (`roster.spec.NAME_PATTERN`)."""
        return self._scoped(NETWORKS_DIR, name)

    def _scoped(self, kind: str, name: str) -> SessionStore:
        if not _AGENT_NAME.fullmatch(name):
            raise ValueError(f"not an agent's or a network's name: {name!r}")
        folder = self.dir / kind / name
        with self._scopes_lock:
            store = self._scopes.get(folder)
            if store is None:
                store = SessionStore(self.dir, folder=folder)
                self._scopes[folder] = store
            return store

    def path_for(self, session_key: str) -> Path:
        """The file for `session_key`, always directly inside `sessions/`.

        The name keeps `[A-Za-z0-9._-]` of the key (others become `_`, a leading dot too, at
        most 80 characters) and appends 12 hex digits of the key's SHA-256, so two different
        keys never share a file. Raises `ValueError` for an empty key.
        """
        if not session_key:
            raise ValueError("a session key must not be empty")
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", session_key)[:80]
        if safe.startswith("."):
            safe = "_" + safe[1:]
        digest = hashlib.sha256(session_key.encode()).hexdigest()[:12]
        return self.dir / f"{safe}-{digest}.jsonl"

    def load(self, session_key: str) -> list[SessionLine | CompactionLine]:
        """Every readable line of the session, in order; `[]` when there is no file.

        A line that does not parse (a write cut short by a crash) is skipped with a warning.
        """
        return list(self._current(session_key).lines)

    def count(self, session_key: str) -> int:
        """How many readable lines the session holds (0 without a file)."""
        return len(self._current(session_key).lines)

    def messages(self, session_key: str, upto: int | None = None) -> list[Message]:
        """The messages the model should see in the session's first `upto` lines (all when
        None): from the latest checkpoint among them on (`messages_of`).

        Only the lines from that checkpoint on are looked at, and only bytes appended since
        the store last read the file are parsed."""
        view = self._current(session_key)
        end = len(view.lines) if upto is None else min(upto, len(view.lines))
        start = view.checkpoint if 0 <= view.checkpoint < end else 0
        return messages_of(view.lines[start:end])

    def _current(self, session_key: str) -> View:
        """The session's lines as the file is now, read under a shared lock (a snapshot:
        callers may keep it)."""
        path = self.path_for(session_key)
        if not path.exists():
            return View()
        with self._locked(path, exclusive=False):
            return VIEWS.snapshot(path)

    def append(self, session_key: str, lines: Sequence[SessionLine | CompactionLine]) -> None:
        """Append `lines` atomically: all of them, contiguous, in one write, fsynced.

        Concurrent appends never interleave. If a crash left a partial last line, it is closed
        off first so the new lines stay readable. An empty `lines` does nothing.
        """
        if not lines:
            return
        path = self.path_for(session_key)
        with self._locked(path, exclusive=True):
            self._append(path, lines)

    def append_once(self, session_key: str, line: SessionLine, *, key: str) -> bool:
        """Append `line` with `meta["idem"] = key` unless the session already holds that key.

        The check and the write happen under one lock, so a replayed durable step writes its
        message once. A key remembered by a checkpoint (`covered_idem`) counts as present.
        The keys are indexed per file and only the bytes appended since the last look are
        read, so a long session is not re-parsed on every append. Returns True when written.
        """
        path = self.path_for(session_key)
        with self._locked(path, exclusive=True):
            if VIEWS.holds_key(path, key):
                return False
            self._append(path, [line.model_copy(update={"meta": {**line.meta, "idem": key}})])
            return True

    def replace(
        self, session_key: str, lines: Sequence[SessionLine | CompactionLine]
    ) -> Path | None:
        """Atomically make `lines` the whole session, archiving the old file first.

        The old file is kept as `sessions/archive/<name>-<UTC timestamp>.jsonl`; the new one is
        written to a temp file, fsynced and renamed over. Returns the archive path, or None when
        there was no old file.
        """
        path = self.path_for(session_key)
        with self._locked(path, exclusive=True):
            return self._rewrite(path, lines)

    def update(
        self,
        session_key: str,
        change: Callable[
            [list[SessionLine | CompactionLine]], Sequence[SessionLine | CompactionLine] | None
        ],
    ) -> bool:
        """Read, change and `replace` the session under one lock, so no append is lost.

        `change` gets the current lines and returns the new ones, or None to leave the file
        alone. It runs with the lock held and must not call this store for the same session.
        Returns True when the file was replaced.
        """
        path = self.path_for(session_key)
        with self._locked(path, exclusive=True):
            new = change(VIEWS.snapshot(path).lines)
            if new is None:
                return False
            self._rewrite(path, new)
            return True

    @contextmanager
    def _locked(self, path: Path, *, exclusive: bool) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            with locked(path, fd, shared=not exclusive):
                yield
        finally:
            os.close(fd)

    def _append(self, path: Path, lines: Sequence[SessionLine | CompactionLine]) -> None:
        data = b"".join(line.model_dump_json().encode() + b"\n" for line in lines)
        created = not path.exists()
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags, 0o644)
        try:
            before = os.fstat(fd)
            if before.st_size and os.pread(fd, 1, before.st_size - 1) != b"\n":
                data = b"\n" + data
            _write_all(fd, data)
            os.fsync(fd)
            VIEWS.appended(path, fd, before, data)
        finally:
            os.close(fd)
        if created:
            _fsync_dir(self.dir)
        wrote(path)

    def _rewrite(self, path: Path, lines: Sequence[SessionLine | CompactionLine]) -> Path | None:
        archived = self._archive(path) if path.exists() else None
        data = b"".join(line.model_dump_json().encode() + b"\n" for line in lines)
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
        VIEWS.forget(path)
        _fsync_dir(self.dir)
        for changed in (path, archived):
            if changed is not None:
                wrote(changed)
        return archived

    def _archive(self, path: Path) -> Path:
        self.archive_dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = self.archive_dir / f"{path.stem}-{stamp}.jsonl"
        n = 1
        while target.exists():
            target = self.archive_dir / f"{path.stem}-{stamp}-{n}.jsonl"
            n += 1
        try:
            os.link(path, target)  # the old inode lives on; no copy needed
        except OSError:
            shutil.copyfile(path, target)
            with open(target, "rb") as f:
                os.fsync(f.fileno())
        _fsync_dir(self.archive_dir)
        return target
