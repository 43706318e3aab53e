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
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import ValidationError

from harness.agent.memory.history import HISTORY_DIR
from harness.agent.memory.notes import MEMORY_DIR, MEMORY_FILE
from harness.agent.session import LINE_ADAPTER, SessionLine
from harness.search.extract import Passage, passages, searchable
from harness.search.index import Stamp
from harness.workspace_files import UnsafePathError, entries, lstat, read_bytes

KNOWLEDGE_DIR = "knowledge"
ARCHIVE_DIR = "archive"
Kind = Literal["memory", "chat", "knowledge"]
KINDS: tuple[Kind, ...] = ("memory", "chat", "knowledge")
MAX_DEPTH = 8  # folders below knowledge/ that are searched


@dataclass(frozen=True)
class Corpus:
    """A set of files indexed under `key`: how to list them (path -> stamp), read one and
    cut it into passages. `kind` is what a hit's source starts with."""

    kind: Kind
    key: str
    listing: Callable[[], dict[str, Stamp]]
    read: Callable[[str], bytes]
    parse: Callable[[str, bytes], list[Passage]]


def memory_corpus(root: Path) -> Corpus:
    """The memory files of the memory root `root`."""

    def listing() -> dict[str, Stamp]:
        names = [MEMORY_FILE]
        names += _md_files(root, MEMORY_DIR)
        names += _md_files(root, f"{MEMORY_DIR}/{HISTORY_DIR}")
        return _stamps(root, names)

    return Corpus("memory", f"memory:{root}", listing, lambda p: read_bytes(root, p), passages)


def knowledge_corpus(workspace: Path) -> Corpus:
    """The documents under `knowledge/` of `workspace`, in folders too (links and hidden
    files left out)."""

    def listing() -> dict[str, Stamp]:
        return _stamps(workspace, _documents(workspace, KNOWLEDGE_DIR, 0))

    return Corpus(
        "knowledge",
        f"knowledge:{workspace}",
        listing,
        lambda p: read_bytes(workspace, p),
        passages,
    )


def chat_corpus(transcript: Path) -> Corpus:
    """The transcript file `transcript` and its archived versions (`archive/<stem>-*.jsonl`
    beside it), paths relative to its folder."""
    folder = transcript.parent

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

    return Corpus("chat", f"chat:{transcript}", listing, read, transcript_passages)


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


def _md_files(root: Path, folder: str) -> list[str]:
    try:
        found = entries(root, folder)
    except UnsafePathError:
        return []
    return [f"{folder}/{n}" for n, kind in found if kind == "file" and n.endswith(".md")]


def _documents(root: Path, folder: str, depth: int) -> list[str]:
    try:
        found = entries(root, folder)
    except UnsafePathError:
        return []
    names: list[str] = []
    for name, kind in found:
        if name.startswith("."):
            continue
        path = str(PurePosixPath(folder, name))
        if kind == "file" and searchable(name):
            names.append(path)
        elif kind == "folder" and depth < MAX_DEPTH:
            names += _documents(root, path, depth + 1)
    return names


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
