"""The embedding pass of a search: stored batch by batch, and bounded in time."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.llm.errors import TransientModelError
from harness.search.extract import passages
from harness.search.index import SearchIndex, Stamp
from harness.search.vectors import EMBED_BATCH, VectorStore

MODEL = "fake-embed"


class ScriptedEmbedder:
    """An embedder whose calls take `took_s` on `clock` each, and whose call `fail_at`
    (counting from 1) fails as an endpoint that does not answer."""

    model = MODEL

    def __init__(self, took_s: float = 0.0, fail_at: int = 0) -> None:
        self.now = 0.0
        self.took_s = took_s
        self.fail_at = fail_at
        self.calls: list[int] = []

    def clock(self) -> float:
        return self.now

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        self.now += self.took_s
        if len(self.calls) == self.fail_at:
            raise TransientModelError("timed out", provider="openai")
        return [[1.0, float(len(text))] for text in texts]


def _index(tmp_path: Path, notes: int) -> SearchIndex:
    index = SearchIndex(tmp_path / "index.sqlite")
    files = {f"note{i}.md": f"Note number {i} says something." for i in range(notes)}
    stamps = {path: Stamp(hash(text), len(text)) for path, text in files.items()}
    index.sync("k", stamps, lambda path: files[path].encode(), passages)
    return index


def _vector_rows(index: SearchIndex) -> int:
    with sqlite3.connect(index.path) as db:
        return int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])


def test_embed_missing_keeps_the_batches_that_came_back_when_a_later_one_fails(
    tmp_path: Path,
) -> None:
    # Given three batches' worth of new passages, and an endpoint failing on the second batch
    index = _index(tmp_path, 2 * EMBED_BATCH + 10)
    store = VectorStore(index.path, MODEL)
    embedder = ScriptedEmbedder(fail_at=2)
    # When the search's embedding pass runs
    with pytest.raises(TransientModelError):
        store.embed_missing(["k"], embedder, clock=embedder.clock)
    # Then the first batch's vectors are stored, and the next pass sends only the rest
    assert _vector_rows(index) == EMBED_BATCH
    embedder.fail_at = 0
    assert store.embed_missing(["k"], embedder, clock=embedder.clock) == EMBED_BATCH + 10
    assert _vector_rows(index) == 2 * EMBED_BATCH + 10


def test_embed_missing_starts_no_batch_once_its_budget_has_passed(tmp_path: Path) -> None:
    # Given four batches of new passages, and an endpoint taking 20 s a batch
    index = _index(tmp_path, 4 * EMBED_BATCH)
    store = VectorStore(index.path, MODEL)
    embedder = ScriptedEmbedder(took_s=20.0)
    # When the pass runs with 30 s to spend
    with pytest.raises(TransientModelError, match="left for the next search"):
        store.embed_missing(["k"], embedder, budget_s=30.0, clock=embedder.clock)
    # Then it sent two batches (the second began at 20 s) and kept both
    assert embedder.calls == [EMBED_BATCH, EMBED_BATCH]
    assert _vector_rows(index) == 2 * EMBED_BATCH
