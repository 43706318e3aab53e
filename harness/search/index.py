"""The search index: one SQLite database with an FTS5 table, kept in the state folder.

Files are grouped under a key (a memory root, a chat's transcripts, the knowledge folder):

    files(id, key, path, mtime_ns, size, sha256)   one row per indexed file
    passages(id, file_id, position)                one row per passage of a file
    fts(body)                                      FTS5, rowid = passages.id, porter stemming
    meta(name, value)                              `generation`: times the index was cleared

`sync` brings one key up to date with a listing of its files: a file whose size and mtime are
unchanged is not read; one whose bytes hash the same is only re-stamped; a changed one has its
passages replaced; one no longer listed is dropped. `sync_paths` does the same for a few
paths only (those a watcher saw change), leaving the key's other files alone. `checks` counts
both, so a test can see what a query's freshness check cost without timing it. Each sync is
one transaction: a reader sees a key before or after it, never half of it. Several processes
may share the file (SQLite's locking, a busy timeout); within one the connection is guarded
by a lock.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.search.extract import Passage

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL, path TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, sha256 TEXT NOT NULL, UNIQUE (key, path));
CREATE TABLE IF NOT EXISTS passages (
    id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, position TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS passages_file ON passages (file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5 (body, tokenize = 'porter unicode61');
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""
_WORD = re.compile(r"\w+", re.UNICODE)
# Words too common to rank by: with OR between the words, they would only add noise and time.
_STOP = frozenset(
    "a an and are as at be by did do does for from had has have how i in is it its me my of on"
    " or our so that the their them then there these they this to was we were what when where"
    " which who whom why will with you your".split()
)
SNIPPET_TOKENS = 32


@dataclass(frozen=True)
class Stamp:
    """What says a file may have changed without reading it."""

    mtime_ns: int
    size: int


@dataclass(frozen=True)
class Hit:
    """One ranked passage: the file's `key` and `path`, where in it, a snippet with the
    matched words in [brackets], its BM25 score (lower is better, as SQLite gives it) and
    the passage's row id (what `harness.search.vectors` keys a passage's vector by)."""

    key: str
    path: str
    position: str
    snippet: str
    score: float
    passage: int = 0


@dataclass(frozen=True)
class Checks:
    """What the syncs of one `SearchIndex` have looked at so far: full syncs (a listing of
    every file of a key), path syncs (a few paths), and the file stamps they compared (each
    one an `lstat` by whoever listed or stamped them)."""

    full_syncs: int = 0
    path_syncs: int = 0
    stamps: int = 0


@dataclass(frozen=True)
class Synced:
    """What one `sync` changed: paths (re)indexed and paths dropped."""

    indexed: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()


def match_expression(query: str) -> str:
    """An FTS5 query for free text: its words, quoted, joined by OR (BM25 ranks passages
    holding more and rarer ones first), common English words left out unless nothing else is
    left. "" when the text has no words."""
    words = [w.lower() for w in _WORD.findall(query)]
    kept = [w for w in words if w not in _STOP] or words
    unique = dict.fromkeys(kept)
    return " OR ".join(f'"{w}"' for w in unique)


class SearchIndex:
    """The index in the SQLite file `path` (created with its folder on first use)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._checks = Checks()
        # Autocommit, and each change in an explicit `BEGIN IMMEDIATE`: two processes syncing
        # the same key then take turns, the second seeing what the first wrote.
        self._db = sqlite3.connect(
            path, timeout=30.0, check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode = WAL")
        with self._lock, self._writing():
            for statement in _SCHEMA.split(";"):
                self._db.execute(statement)

    def close(self) -> None:
        """Close the database. Idempotent."""
        with self._lock:
            self._db.close()

    @property
    def checks(self) -> Checks:
        """What the syncs have looked at since this index was opened."""
        with self._lock:
            return self._checks

    def sync(
        self,
        key: str,
        listing: Mapping[str, Stamp],
        read: Callable[[str], bytes],
        parse: Callable[[str, bytes], list[Passage]],
    ) -> Synced:
        """Make `key`'s files those of `listing` (path -> stamp). `read(path)` gives a file's
        bytes, `parse(path, data)` its passages; a file `read` fails on (`OSError`: gone, or
        refused as a link) is dropped. One transaction."""
        with self._lock, self._writing():
            self._count(full=1, stamps=len(listing))
            known = {
                row[0]: (row[1], Stamp(row[2], row[3]), row[4])
                for row in self._db.execute(
                    "SELECT path, id, mtime_ns, size, sha256 FROM files WHERE key = ?", (key,)
                )
            }
            gone = [p for p in known if p not in listing]
            return self._update(key, known, listing, gone, read, parse)

    def sync_paths(
        self,
        key: str,
        stamps: Mapping[str, Stamp | None],
        read: Callable[[str], bytes],
        parse: Callable[[str, bytes], list[Passage]],
    ) -> Synced:
        """Bring only `stamps`' paths of `key` up to date: a path with a stamp as `sync`
        would, a path stamped None (gone, or not the key's) dropped; other files untouched.
        One transaction."""
        with self._lock, self._writing():
            self._count(paths=1, stamps=len(stamps))
            known: dict[str, tuple[int, Stamp, str]] = {}
            for path in stamps:
                row = self._db.execute(
                    "SELECT id, mtime_ns, size, sha256 FROM files WHERE key = ? AND path = ?",
                    (key, path),
                ).fetchone()
                if row is not None:
                    known[path] = (row[0], Stamp(row[1], row[2]), row[3])
            present = {p: s for p, s in stamps.items() if s is not None}
            gone = [p for p, s in stamps.items() if s is None and p in known]
            return self._update(key, known, present, gone, read, parse)

    def _update(
        self,
        key: str,
        known: Mapping[str, tuple[int, Stamp, str]],
        listing: Mapping[str, Stamp],
        gone: list[str],
        read: Callable[[str], bytes],
        parse: Callable[[str, bytes], list[Passage]],
    ) -> Synced:
        indexed: list[str] = []
        dropped = list(gone)
        for path, stamp in listing.items():
            old = known.get(path)
            if old is not None and old[1] == stamp:
                continue
            try:
                data = read(path)
            except OSError:
                dropped += [path] if old is not None else []
                continue
            digest = hashlib.sha256(data).hexdigest()
            if old is not None and old[2] == digest:
                self._stamp(old[0], stamp)
                continue
            self._replace(key, path, stamp, digest, parse(path, data), old and old[0])
            indexed.append(path)
        for path in dropped:
            self._drop(known[path][0])
        return Synced(tuple(indexed), tuple(dropped))

    def query(self, text: str, keys: Sequence[str], limit: int = 10) -> list[Hit]:
        """The `limit` best passages for free `text` among the files of `keys`, best first;
        [] when the text has no words or no key is given."""
        expression = match_expression(text)
        if not expression or not keys:
            return []
        marks = ",".join("?" * len(keys))
        sql = (
            "SELECT f.key, f.path, p.position,"
            f" snippet(fts, 0, '[', ']', '…', {SNIPPET_TOKENS}), bm25(fts) AS score, p.id"
            " FROM fts JOIN passages p ON p.id = fts.rowid JOIN files f ON f.id = p.file_id"
            f" WHERE fts MATCH ? AND f.key IN ({marks}) ORDER BY score LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(sql, (expression, *keys, limit)).fetchall()
        return [Hit(*row) for row in rows]

    def files(self, key: str) -> dict[str, Stamp]:
        """The files indexed under `key`, with the stamps they were indexed at."""
        with self._lock:
            rows = self._db.execute(
                "SELECT path, mtime_ns, size FROM files WHERE key = ?", (key,)
            ).fetchall()
        return {row[0]: Stamp(row[1], row[2]) for row in rows}

    def generation(self) -> int:
        """How many times the index was `clear`ed, by any process: a process that remembers
        what it synced knows to list everything again when this moves."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE name = 'generation'").fetchone()
        return int(row[0]) if row is not None else 0

    def clear(self) -> None:
        """Forget every file (the next sync of each key reads them all again) and move
        `generation` on."""
        with self._lock, self._writing():
            self._db.execute(
                "INSERT INTO meta (name, value) VALUES ('generation', 1)"
                " ON CONFLICT (name) DO UPDATE SET value = value + 1"
            )
            self._db.execute("DELETE FROM fts")
            self._db.execute("DELETE FROM passages")
            self._db.execute("DELETE FROM files")

    def _count(self, full: int = 0, paths: int = 0, stamps: int = 0) -> None:
        old = self._checks
        self._checks = Checks(old.full_syncs + full, old.path_syncs + paths, old.stamps + stamps)

    @contextmanager
    def _writing(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _stamp(self, file_id: int, stamp: Stamp) -> None:
        self._db.execute(
            "UPDATE files SET mtime_ns = ?, size = ? WHERE id = ?",
            (stamp.mtime_ns, stamp.size, file_id),
        )

    def _replace(
        self,
        key: str,
        path: str,
        stamp: Stamp,
        digest: str,
        found: list[Passage],
        file_id: int | None,
    ) -> None:
        if file_id is not None:
            self._drop(file_id)
        cursor = self._db.execute(
            "INSERT INTO files (key, path, mtime_ns, size, sha256) VALUES (?, ?, ?, ?, ?)",
            (key, path, stamp.mtime_ns, stamp.size, digest),
        )
        new_id = cursor.lastrowid
        for passage in found:
            row = self._db.execute(
                "INSERT INTO passages (file_id, position) VALUES (?, ?)",
                (new_id, passage.position),
            ).lastrowid
            self._db.execute("INSERT INTO fts (rowid, body) VALUES (?, ?)", (row, passage.text))

    def _drop(self, file_id: int) -> None:
        ids = [
            r[0] for r in self._db.execute("SELECT id FROM passages WHERE file_id = ?", (file_id,))
        ]
        self._db.executemany("DELETE FROM fts WHERE rowid = ?", [(i,) for i in ids])
        self._db.execute("DELETE FROM passages WHERE file_id = ?", (file_id,))
        self._db.execute("DELETE FROM files WHERE id = ?", (file_id,))
