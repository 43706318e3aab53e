"""What one conversation may search, as corpora the index keeps under their own keys.

    memory     of the conversation's memory root (`harness.agent.memory.scope`): `MEMORY.md`,
               the daily logs `memory/*.md` and the saved versions `memory/history/*.md`.
               Another chat's or person's root is another key, which this chat never names.
    chat       the conversation's own transcript (`sessions/<key>.jsonl` in the state folder)
               and its archived versions: user and assistant text and compaction summaries,
               never tool results (those are the tools' outside content, already seen).
    knowledge  the user's documents under `knowledge/` of the workspace, every chat's.

Memory and knowledge files are listed and read through `harness.workspace_files`, so a link
anywhere below the root is refused (left out of the listing, or dropped from the index when
reading it fails) and never followed. Transcripts live in the state folder, which only the
fleet writes; they are still opened without following a link.

Besides listing all its files, a corpus says which folders hold them (`folders`, for a
watcher) and whether one path is its (`covers`), so a changed path can be stamped alone
(`Corpus.stamp`) without listing the rest.
"""

from __future__ import annotations

import fnmatch
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from harness.agent.memory.history import HISTORY_DIR
from harness.agent.memory.notes import MEMORY_DIR, MEMORY_FILE
from harness.agent.session import LINE_ADAPTER, SessionLine
from harness.search.extract import Passage, passages, searchable
from harness.search.index import Stamp
from harness.workspace_files import UnsafePathError, folder_fd, lstat, read_bytes

KNOWLEDGE_DIR = "knowledge"
ARCHIVE_DIR = "archive"
Kind = Literal["memory", "chat", "knowledge"]
KINDS: tuple[Kind, ...] = ("memory", "chat", "knowledge")
MAX_DEPTH = 8  # folders below knowledge/ that are searched


@dataclass(frozen=True)
class Folder:
    """A folder holding a corpus's files, relative to its root ("" is the root itself);
    `recursive` when files in its sub-folders are the corpus's too."""

    path: str
    recursive: bool = False


@dataclass(frozen=True)
class Corpus:
    """A set of files indexed under `key`: how to list them (path -> stamp), read one and
    cut it into passages. `kind` is what a hit's source starts with. Paths are relative to
    `root`; every file lies in one of `folders`, and `covers(path)` is True exactly for the
    paths `listing` would hold if they were regular files."""

    kind: Kind
    key: str
    root: Path
    folders: tuple[Folder, ...]
    covers: Callable[[str], bool]
    listing: Callable[[], dict[str, Stamp]]
    read: Callable[[str], bytes]
    parse: Callable[[str, bytes], list[Passage]]

    def stamp(self, path: str) -> Stamp | None:
        """The stamp of the corpus's file `path` (one `lstat`, no link followed), or None
        when it is not the corpus's, is gone, or is not a regular file."""
        if not self.covers(path):
            return None
        try:
            info = lstat(self.root, path)
        except OSError:
            return None
        if info is None or not stat.S_ISREG(info.st_mode):
            return None
        return Stamp(info.st_mtime_ns, info.st_size)


def memory_corpus(root: Path) -> Corpus:
    """The memory files of the memory root `root`."""
    folders = (MEMORY_DIR, f"{MEMORY_DIR}/{HISTORY_DIR}")

    def listing() -> dict[str, Stamp]:
        found = _stamps(root, [MEMORY_FILE])
        for folder in folders:
            found |= {p: st for p, st in _scan(root, folder)[0].items() if p.endswith(".md")}
        return found

    def covers(path: str) -> bool:
        folder, _, name = path.rpartition("/")
        if not folder:
            return name == MEMORY_FILE
        return folder in folders and name.endswith(".md") and not name.startswith(".")

    return Corpus(
        "memory",
        f"memory:{root}",
        root,
        (Folder(""), *(Folder(f) for f in folders)),
        covers,
        listing,
        lambda p: read_bytes(root, p),
        passages,
    )


def knowledge_corpus(workspace: Path) -> Corpus:
    """The documents under `knowledge/` of `workspace`, in folders too (links and hidden
    files left out)."""

    def listing() -> dict[str, Stamp]:
        return _documents(workspace, KNOWLEDGE_DIR, 0)

    def covers(path: str) -> bool:
        parts = path.split("/")
        if len(parts) < 2 or parts[0] != KNOWLEDGE_DIR or len(parts) - 2 > MAX_DEPTH:
            return False
        hidden = any(not part or part.startswith(".") for part in parts[1:])
        return not hidden and searchable(path)

    return Corpus(
        "knowledge",
        f"knowledge:{workspace}",
        workspace,
        (Folder(KNOWLEDGE_DIR, recursive=True),),
        covers,
        listing,
        lambda p: read_bytes(workspace, p),
        passages,
    )


def chat_corpus(transcript: Path) -> Corpus:
    """The transcript file `transcript` and its archived versions (`archive/<stem>-*.jsonl`
    beside it), paths relative to its folder."""
    folder = transcript.parent
    archived = f"{ARCHIVE_DIR}/{transcript.stem}-*.jsonl"

    def covers(path: str) -> bool:
        if path == transcript.name:
            return True
        return path.count("/") == 1 and fnmatch.fnmatchcase(path, archived)

    def listing() -> dict[str, Stamp]:
        names = [transcript.name]
        archive = folder / ARCHIVE_DIR
        if archive.is_dir():
            names += sorted(
                f"{ARCHIVE_DIR}/{p.name}"
                for p in archive.glob(f"{transcript.stem}-*.jsonl")
                if not p.is_symlink()
            )
        found: dict[str, Stamp] = {}
        for name in names:
            try:
                info = os.lstat(folder / name)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found[name] = Stamp(info.st_mtime_ns, info.st_size)
        return found

    def read(name: str) -> bytes:
        fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            return handle.read()

    return Corpus(
        "chat",
        f"chat:{transcript}",
        folder,
        (Folder(""), Folder(ARCHIVE_DIR)),
        covers,
        listing,
        read,
        transcript_passages,
    )


def transcript_passages(_name: str, data: bytes) -> list[Passage]:
    """One passage per user or assistant text and per summary of a session file, positioned
    by its line and day. Lines that do not parse are skipped."""
    found: list[Passage] = []
    for number, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        try:
            line = LINE_ADAPTER.validate_python(json.loads(raw))
        except (ValueError, ValidationError):
            continue
        if isinstance(line, SessionLine):
            if line.message.role == "tool" or not line.message.text.strip():
                continue
            text = f"{line.message.role}: {line.message.text}"
        else:
            text = f"summary: {line.summary}"
        found.append(Passage(text, f"line {number}, {line.ts.date().isoformat()}"))
    return found


def _scan(root: Path, folder: str) -> tuple[dict[str, Stamp], list[str]]:
    """The regular files of `root/folder` with their stamps, and its sub-folders, as paths
    relative to `root`: one `scandir` (no open or stat per file), links left out, nothing when
    the folder is missing or a link is on the way."""
    files: dict[str, Stamp] = {}
    folders: list[str] = []
    try:
        with folder_fd(root, folder) as fd, os.scandir(fd) as found:
            for entry in found:
                path = f"{folder}/{entry.name}"
                if entry.is_symlink() or entry.name.startswith("."):
                    continue
                if entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    files[path] = Stamp(info.st_mtime_ns, info.st_size)
                elif entry.is_dir(follow_symlinks=False):
                    folders.append(path)
    except (FileNotFoundError, NotADirectoryError, UnsafePathError):
        pass
    return files, sorted(folders)


def _documents(root: Path, folder: str, depth: int) -> dict[str, Stamp]:
    files, folders = _scan(root, folder)
    found = {path: stamp for path, stamp in files.items() if searchable(path)}
    for sub in folders if depth < MAX_DEPTH else []:
        found |= _documents(root, sub, depth + 1)
    return found


def _stamps(root: Path, names: list[str]) -> dict[str, Stamp]:
    found: dict[str, Stamp] = {}
    for name in names:
        try:
            info = lstat(root, name)
        except OSError:
            continue
        if info is not None and stat.S_ISREG(info.st_mode):
            found[name] = Stamp(info.st_mtime_ns, info.st_size)
    return found
