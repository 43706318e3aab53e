"""Versions of `MEMORY.md`: nothing the agent or a person wrote there is ever lost.

Every replacement of `MEMORY.md` by the harness (a distillation, a restore) first copies the
file as it is, hand edits included, into `memory/history/`:

    memory/history/0001.md      the text MEMORY.md had before the replacement
    memory/history/0001.json    {"version": 1, "saved_at": ..., "reason": ..., "size": ...}
    memory/history/rejected/    distillations held back, each with a .json saying why

Replacements are serialised by the lock on `memory/history/.lock` (`harness.shared_lock`: a
Redis lock across hosts, else an exclusive `flock`), and every file
is written atomically (temporary file + rename), so readers see a whole version or none.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from harness.agent.memory.notes import MEMORY_DIR, MEMORY_FILE
from harness.errors import HarnessError
from harness.shared_lock import locked
from harness.workspace_files import files_in, open_fd, read_bytes, write_replace

HISTORY_DIR = "history"
REJECTED_DIR = "rejected"


class UnknownVersionError(HarnessError):
    """No saved version of MEMORY.md has this number."""


class MemoryChangedError(HarnessError):
    """MEMORY.md changed since the text a replacement was based on was read."""


class VersionRecord(BaseModel, frozen=True):
    """One saved version: the text MEMORY.md had until `saved_at`, and why it was replaced."""

    version: int
    saved_at: datetime
    reason: str
    size: int
    sha256: str


class RejectedRecord(BaseModel, frozen=True):
    """A candidate MEMORY.md that was held back instead of written."""

    name: str
    saved_at: datetime
    reason: str
    size: int


_Record = TypeVar("_Record", VersionRecord, RejectedRecord)


def text_sha(text: str) -> str:
    """The hex SHA-256 of `text` as UTF-8: how versions and plans name a content."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class MemoryHistory:
    """The versions of one workspace's `MEMORY.md`. Safe across threads and processes."""

    def __init__(self, workspace: Path) -> None:
        self.root = workspace
        self.memory_file = workspace / MEMORY_FILE
        self.folder = workspace / MEMORY_DIR / HISTORY_DIR
        self._folder = f"{MEMORY_DIR}/{HISTORY_DIR}"

    def current(self) -> str:
        """The text of MEMORY.md now; "" when it does not exist. Raises `UnsafePathError`
        when it is a link (or hard link): a distillation never replaces what it cannot read."""
        try:
            return read_bytes(self.root, MEMORY_FILE).decode("utf-8")
        except FileNotFoundError:
            return ""

    def versions(self) -> list[VersionRecord]:
        """Every saved version, oldest first. Unreadable metadata files (links included) are
        skipped."""
        names = [n for n in self._names(self._folder, ".json") if n[:1].isdigit()]
        records = self._records(self._folder, names, VersionRecord)
        return sorted(records, key=lambda r: r.version)

    def read(self, version: int) -> str:
        """The text of a saved version. Raises UnknownVersionError when there is none."""
        try:
            return read_bytes(self.root, self._text_name(version)).decode("utf-8")
        except FileNotFoundError as exc:
            raise UnknownVersionError(f"there is no version {version} of MEMORY.md") from exc

    def replace(
        self, text: str, *, reason: str, now: datetime, expected_sha: str | None = None
    ) -> VersionRecord | None:
        """Save the current MEMORY.md as a new version, then write `text` in its place.

        `reason` says why the file is being replaced ("distillation (run ...)"). With
        `expected_sha`, the replacement happens only if the current file still has that
        content; otherwise MemoryChangedError is raised and nothing is written (a person
        edited the file meanwhile, and their edit must not be overwritten unseen). When the
        file already holds `text`, nothing is written and None is returned, which makes a
        repeated call a no-op. Returns the record of the saved previous version.
        """
        with self._locked():
            current = self.current()
            if current == text:
                return None
            if expected_sha is not None and text_sha(current) != expected_sha:
                raise MemoryChangedError("MEMORY.md was changed while a new version was prepared")
            record = self._save_version(current, reason=reason, now=now)
            write_replace(self.root, MEMORY_FILE, text.encode("utf-8"))
            return record

    def restore(self, version: int, *, now: datetime) -> VersionRecord | None:
        """Bring back a saved version; the text it replaces becomes a new version itself.

        Raises UnknownVersionError. Returns None when MEMORY.md already holds that text.
        """
        text = self.read(version)
        return self.replace(text, reason=f"restore of version {version}", now=now)

    def reject(self, candidate: str, *, reason: str, name: str, now: datetime) -> RejectedRecord:
        """Keep a held-back candidate under `rejected/<name>.md` with why it was held back.

        `name` (e.g. the run id) makes the call idempotent: a repeat overwrites the same files.
        """
        folder = f"{self._folder}/{REJECTED_DIR}"
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
        record = RejectedRecord(
            name=safe, saved_at=now, reason=reason, size=len(candidate.encode("utf-8"))
        )
        write_replace(self.root, f"{folder}/{safe}.md", candidate.encode("utf-8"))
        write_replace(self.root, f"{folder}/{safe}.json", record.model_dump_json(indent=1).encode())
        return record

    def rejected(self) -> list[RejectedRecord]:
        """Every held-back candidate, oldest first."""
        folder = f"{self._folder}/{REJECTED_DIR}"
        records = self._records(folder, self._names(folder, ".json"), RejectedRecord)
        return sorted(records, key=lambda r: r.saved_at)

    def read_rejected(self, name: str) -> str:
        """The text of a held-back candidate. Raises UnknownVersionError when there is none."""
        if "/" in name or name.startswith("."):
            raise UnknownVersionError(f"there is no held-back distillation {name!r}")
        try:
            return read_bytes(self.root, f"{self._folder}/{REJECTED_DIR}/{name}.md").decode()
        except FileNotFoundError as exc:
            raise UnknownVersionError(f"there is no held-back distillation {name!r}") from exc

    def _save_version(self, text: str, *, reason: str, now: datetime) -> VersionRecord:
        existing = self.versions()
        number = existing[-1].version + 1 if existing else 1
        record = VersionRecord(
            version=number,
            saved_at=now,
            reason=reason,
            size=len(text.encode("utf-8")),
            sha256=text_sha(text),
        )
        # The text first, then its metadata: a version is listed only once its text is whole.
        meta = record.model_dump_json(indent=1).encode()
        write_replace(self.root, self._text_name(number), text.encode("utf-8"))
        write_replace(self.root, f"{self._folder}/{number:04d}.json", meta)
        return record

    def _text_name(self, version: int) -> str:
        return f"{self._folder}/{version:04d}.md"

    def _records(self, folder: str, names: list[str], model: type[_Record]) -> list[_Record]:
        """The metadata files `names` in `folder` read as `model`; an unreadable one (a link,
        bad JSON) is skipped."""
        records = []
        for name in names:
            try:
                records.append(model.model_validate_json(read_bytes(self.root, f"{folder}/{name}")))
            except (OSError, ValueError):
                continue
        return records

    def _names(self, folder: str, suffix: str) -> list[str]:
        """The regular files of `folder` ending in `suffix`, sorted (links left out)."""
        return [name for name in files_in(self.root, folder) if name.endswith(suffix)]

    @contextmanager
    def _locked(self) -> Iterator[None]:
        lock = f"{self._folder}/.lock"
        fd = open_fd(self.root, lock, os.O_WRONLY | os.O_CREAT, create_parents=True)
        try:
            with locked(self.root / lock, fd):
                yield
        finally:
            os.close(fd)
