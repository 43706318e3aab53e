"""Passage vectors, in the search index's own SQLite file, beside the passages they embed:

    vectors(id, passage_id, model, digest, vector)   one row per embedded passage; `vector`
                                                     is float32 bytes of unit length

A passage's vector follows the passage: a trigger on `passages` lets go of it when the
passage is deleted (its file changed or went away), and the next `embed_missing` drops every
vector let go of, after reusing those whose text (`digest`: model and text hashed) came back
in a new passage. So an edit to one line of a note re-embeds that passage, not its whole file,
and the index's `sync` (`harness.search.index`) needs to know nothing of vectors.

A process without embeddings calls `forget_vectors`, which drops the table and the trigger:
vectors never outlive a change made while nothing kept them current.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path

from harness.llm.errors import TransientModelError
from harness.search.embeddings import Embedder, pack, similarity, unpack
from harness.search.index import SNIPPET_TOKENS, Hit

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors (id INTEGER PRIMARY KEY, passage_id INTEGER UNIQUE,"
    " model TEXT NOT NULL, digest TEXT NOT NULL, vector BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS vectors_digest ON vectors (digest)",
    "CREATE TRIGGER IF NOT EXISTS vectors_follow_passages AFTER DELETE ON passages BEGIN"
    " UPDATE vectors SET passage_id = NULL WHERE passage_id = old.id; END",
)
_FORGET = (
    "DROP TRIGGER IF EXISTS vectors_follow_passages",
    "DROP TABLE IF EXISTS vectors",
)
# Passages embedded by one search at most: the first search over a large, new folder
# answers within the tool's time; the following searches embed the rest.
EMBED_PER_SEARCH = 1024
EMBED_BATCH = 64  # texts handed to the embedder at once; each batch is stored as it comes
EMBED_BUDGET_S = 30.0
"""How long one search's embedding pass may take: no batch starts after it. With one
request in flight past it (15 s at most, `openai_embeddings.TIMEOUT`) and the query's own
(as long), a search is well inside the search tool's 120 s."""
_IN_KEYS = "JOIN files f ON f.id = p.file_id WHERE f.key IN ({marks})"


def forget_vectors(path: Path) -> None:
    """Drop every vector (and the trigger keeping them) from the index file `path`, if any.
    Idempotent; for a fleet that runs without embeddings."""
    with closing(sqlite3.connect(path, timeout=30.0, isolation_level=None)) as db:
        for statement in _FORGET:
            db.execute(statement)


def digest(model: str, text: str) -> str:
    """What says two passages' vectors are the same: the model and the text, hashed."""
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


class VectorStore:
    """The vectors of `model` in the index file `path`, whose `passages` table must exist
    (open the `SearchIndex` first). Vectors of another model are dropped on opening."""

    def __init__(self, path: Path, model: str) -> None:
        self.model = model
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=30.0, check_same_thread=False)
        self._db.isolation_level = None
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                self._db.execute(statement)
            self._db.execute("DELETE FROM vectors WHERE model != ?", (model,))

    def close(self) -> None:
        """Close the connection. Idempotent."""
        with self._lock:
            self._db.close()

    def embed_missing(
        self,
        keys: Sequence[str],
        embedder: Embedder,
        budget_s: float = EMBED_BUDGET_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> int:
        """Give a vector to up to `EMBED_PER_SEARCH` passages of `keys` that have none,
        reusing a let-go vector of the same text, and drop the let-go rest. Calls the
        embedder outside any transaction, `EMBED_BATCH` texts at a time and only for texts
        with no vector to reuse, storing each batch's vectors as they come; returns how many
        texts it sent. Raises what `embedder.embed` raises, and `TransientModelError` when
        texts are left once `budget_s` (by `clock`) has passed: what was stored stays, so
        the next search goes on from there."""
        if not keys:
            return 0
        marks = ",".join("?" * len(keys))
        sql = (
            "SELECT p.id, fts.body FROM passages p JOIN fts ON fts.rowid = p.id"
            " LEFT JOIN vectors v ON v.passage_id = p.id "
            + _IN_KEYS.format(marks=marks)
            + " AND v.id IS NULL LIMIT ?"
        )
        with self._lock:
            missing = self._db.execute(sql, (*keys, EMBED_PER_SEARCH)).fetchall()
        pending = [(pid, digest(self.model, text), text) for pid, text in missing]
        reused = self._store(pending, [None] * len(pending))
        todo = [item for item, done in zip(pending, reused, strict=True) if not done]
        self._purge()
        deadline = clock() + budget_s
        for start in range(0, len(todo), EMBED_BATCH):
            if clock() >= deadline:
                raise TransientModelError(
                    f"embedding new passages took over {budget_s:g}s; "
                    f"{len(todo) - start} left for the next search"
                )
            batch = todo[start : start + EMBED_BATCH]
            vectors = embedder.embed([text for _, _, text in batch])
            self._store(batch, [pack(v) for v in vectors])
        return len(todo)

    def nearest(self, query: Sequence[float], keys: Sequence[str], limit: int) -> list[int]:
        """The ids of the `limit` passages of `keys` most like the unit vector `query`,
        most alike first."""
        if not keys:
            return []
        marks = ",".join("?" * len(keys))
        sql = "SELECT v.passage_id, v.vector FROM vectors v JOIN passages p ON p.id = v.passage_id "
        with self._lock:
            rows = self._db.execute(sql + _IN_KEYS.format(marks=marks), keys).fetchall()
        scored = sorted(
            ((similarity(query, unpack(blob)), pid) for pid, blob in rows), reverse=True
        )
        return [pid for _, pid in scored[:limit]]

    def hits(self, ids: Sequence[int]) -> dict[int, Hit]:
        """The passages `ids` as hits (score 0.0), their snippet the passage's first words."""
        marks = ",".join("?" * len(ids))
        sql = (
            "SELECT f.key, f.path, p.position, fts.body, p.id FROM passages p"
            " JOIN fts ON fts.rowid = p.id JOIN files f ON f.id = p.file_id"
            f" WHERE p.id IN ({marks})"
        )
        with self._lock:
            rows = self._db.execute(sql, tuple(ids)).fetchall()
        return {row[4]: Hit(row[0], row[1], row[2], _opening(row[3]), 0.0, row[4]) for row in rows}

    def _purge(self) -> None:
        """Drop the vectors let go of (their passage deleted): after the pass reused those
        it could, so an edit re-embeds only what changed."""
        with self._lock, self._db:
            self._db.execute("DELETE FROM vectors WHERE passage_id IS NULL")

    def _store(
        self, pending: Sequence[tuple[int, str, str]], blobs: Sequence[bytes | None]
    ) -> list[bool]:
        """Store each pending passage's vector (None: reuse one of the same digest) if the
        passage still holds the text it was hashed from; whether each now has one."""
        done: list[bool] = []
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            for (pid, hashed, text), blob in zip(pending, blobs, strict=True):
                if blob is None:
                    row = self._db.execute(
                        "SELECT vector FROM vectors WHERE digest = ? LIMIT 1", (hashed,)
                    ).fetchone()
                    blob = row[0] if row is not None else None
                body = self._db.execute("SELECT body FROM fts WHERE rowid = ?", (pid,)).fetchone()
                # The id may now be another passage's (SQLite reuses the highest ids).
                if blob is None or body is None or body[0] != text:
                    done.append(False)
                    continue
                self._db.execute(
                    "INSERT OR REPLACE INTO vectors (passage_id, model, digest, vector)"
                    " VALUES (?, ?, ?, ?)",
                    (pid, self.model, hashed, blob),
                )
                done.append(True)
        return done


def _opening(text: str) -> str:
    words = text.split()
    head = " ".join(words[:SNIPPET_TOKENS])
    return head + ("…" if len(words) > SNIPPET_TOKENS else "")
