"""Hybrid ranking: BM25 and embeddings from an OpenAI-compatible endpoint (the scripted model
server's `/v1/embeddings`, through the real SDK), fused by Reciprocal Rank Fusion."""

from __future__ import annotations

import logging
import socket
import sqlite3
from pathlib import Path

import pytest

from harness.search.extract import passages
from harness.search.hybrid import KEYWORD_ONLY, Ranker, fuse
from harness.search.index import SearchIndex, Stamp
from harness.search.openai_embeddings import OpenAIEmbedder
from tests.fakes.model_server import ModelServer

MODEL = "text-embedding-3-small"


def _embedder(server: ModelServer, url: str | None = None) -> OpenAIEmbedder:
    return OpenAIEmbedder(api_key=server.api_key, model=MODEL, base_url=url or server.openai_url)


def _sync(index: SearchIndex, files: dict[str, str], key: str = "k") -> None:
    stamps = {path: Stamp(hash(text), len(text)) for path, text in files.items()}
    index.sync(key, stamps, lambda path: files[path].encode(), passages)


def _embedded(server: ModelServer) -> list[str]:
    """Every text sent to the embeddings endpoint so far, in order."""
    return [t for r in server.requests if r.api == "embeddings" for t in r.body["input"]]


def _vector_rows(index: SearchIndex) -> int:
    with sqlite3.connect(index.path) as db:
        return int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])


NOTES = {
    "car.md": "The automobile goes to the garage for new tyres before winter.",
    "tea.md": "The user likes green tea in the morning.",
}


def test_hybrid_finds_a_paraphrase_bm25_alone_misses(
    tmp_path: Path, model_server: ModelServer
) -> None:
    # Given notes, and an embedding model for which "vehicle" means "automobile"
    model_server.synonyms.update({"automobile": "car", "vehicle": "car"})
    index = SearchIndex(tmp_path / "index.sqlite")
    _sync(index, NOTES)
    question = "vehicle serviced?"
    # When asked with none of the note's words, by keywords alone and hybrid
    keyword = Ranker(index, None).rank(question, ["k"], 5)
    hybrid = Ranker(index, _embedder(model_server)).rank(question, ["k"], 5)
    # Then only hybrid ranking finds the car note, first, with its position
    assert keyword.hits == [], keyword
    assert [h.path for h in hybrid.hits][:1] == ["car.md"], hybrid
    assert hybrid.hits[0].position == "line 1" and hybrid.note is None
    assert hybrid.hits[0].snippet.startswith("The automobile goes")


def test_hybrid_ranks_a_passage_both_rankings_agree_on_first(
    tmp_path: Path, model_server: ModelServer
) -> None:
    # Given a note that shares the query's word and another that only shares its meaning
    model_server.synonyms.update({"automobile": "car"})
    index = SearchIndex(tmp_path / "index.sqlite")
    _sync(index, {**NOTES, "car2.md": "The car is red."})
    # When searching for the car
    hybrid = Ranker(index, _embedder(model_server)).rank("red car", ["k"], 5)
    # Then the note both BM25 and the embeddings place first leads, the paraphrase follows
    assert [h.path for h in hybrid.hits][:2] == ["car2.md", "car.md"], hybrid
    assert "[car]" in hybrid.hits[0].snippet


def test_hybrid_embeds_only_new_and_changed_passages(
    tmp_path: Path, model_server: ModelServer
) -> None:
    # Given a note of two passages (paragraphs of ~800 characters) and another note,
    # indexed and searched once
    first = "\n".join(["The dentist appointment is on Tuesday."] * 22)
    second = "\n".join(["The garage called about the winter tyres."] * 22)
    files = {"long.md": f"{first}\n\n{second}", "tea.md": NOTES["tea.md"]}
    index = SearchIndex(tmp_path / "index.sqlite")
    ranker = Ranker(index, _embedder(model_server))
    _sync(index, files)
    ranker.rank("dentist", ["k"], 5)
    assert sorted(_embedded(model_server)) == sorted([first, second, NOTES["tea.md"], "dentist"])
    before = len(_embedded(model_server))
    # When the second passage of the first note changes, and the next search runs
    changed = second.replace("winter", "summer")
    files["long.md"] = f"{first}\n\n{changed}"
    _sync(index, files)
    found = ranker.rank("garage", ["k"], 5)
    # Then only the changed passage and the query are embedded, and every passage has one
    # vector (the old passage's vector went with it)
    assert _embedded(model_server)[before:] == [changed, "garage"]
    assert found.hits[0].path == "long.md" and found.note is None
    assert _vector_rows(index) == 3


def test_hybrid_drops_the_vectors_of_a_deleted_file(
    tmp_path: Path, model_server: ModelServer
) -> None:
    # Given two notes embedded
    index = SearchIndex(tmp_path / "index.sqlite")
    ranker = Ranker(index, _embedder(model_server))
    _sync(index, NOTES)
    ranker.rank("tea", ["k"], 5)
    assert _vector_rows(index) == 2
    # When one is deleted and the next search runs
    _sync(index, {"tea.md": NOTES["tea.md"]})
    found = ranker.rank("automobile", ["k"], 5)
    # Then its vector is gone and it is never found
    assert _vector_rows(index) == 1
    assert [h.path for h in found.hits] == ["tea.md"], found


@pytest.mark.parametrize("down", ["error", "refused"])
def test_hybrid_answers_by_keywords_with_a_note_when_the_endpoint_is_down(
    tmp_path: Path, model_server: ModelServer, caplog: pytest.LogCaptureFixture, down: str
) -> None:
    # Given an embeddings endpoint that answers 500, or a port nothing listens on
    index = SearchIndex(tmp_path / "index.sqlite")
    _sync(index, NOTES)
    url = None
    if down == "error":
        model_server.embeddings_status = 500
    else:
        with socket.socket() as free:
            free.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{free.getsockname()[1]}/v1"
    ranker = Ranker(index, _embedder(model_server, url))
    # When searching
    with caplog.at_level(logging.WARNING, logger="harness.search.hybrid"):
        found = ranker.rank("automobile tyres", ["k"], 5)
    # Then the BM25 hits come back with a note, one line is logged, and the key is in none
    assert [h.path for h in found.hits] == ["car.md"] and found.note == KEYWORD_ONLY
    assert len(caplog.records) == 1, caplog.text
    assert "keywords only" in caplog.text and model_server.api_key not in caplog.text


def test_hybrid_ranks_only_the_keys_it_is_given(tmp_path: Path, model_server: ModelServer) -> None:
    # Given two chats' notes embedded under their own keys
    index = SearchIndex(tmp_path / "index.sqlite")
    ranker = Ranker(index, _embedder(model_server))
    _sync(index, {"a.md": "The door code is 4711."}, key="chat-a")
    _sync(index, {"b.md": "The user likes tea."}, key="chat-b")
    ranker.rank("door code", ["chat-a", "chat-b"], 5)
    # When chat B searches for the door code
    found = ranker.rank("door code", ["chat-b"], 5)
    # Then nothing of chat A is ranked, not even by meaning
    assert [h.key for h in found.hits] == ["chat-b"], found


def test_ranker_without_embeddings_forgets_stored_vectors(
    tmp_path: Path, model_server: ModelServer
) -> None:
    # Given an index whose passages were embedded by an earlier run
    index = SearchIndex(tmp_path / "index.sqlite")
    _sync(index, NOTES)
    Ranker(index, _embedder(model_server)).rank("tea", ["k"], 5)
    # When a run without embeddings opens it
    Ranker(index, None)
    # Then no vector is kept (none would follow the passages' changes)
    with sqlite3.connect(index.path) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert "vectors" not in tables and "vectors_follow_passages" not in tables


def test_fuse_scores_by_reciprocal_rank() -> None:
    # Given two rankings that disagree
    keyword, semantic = [1, 2, 3], [3, 4, 1]
    # When fused
    fused = fuse([keyword, semantic])
    # Then ids in both come first (1: 1/61 + 1/63 beats 3: 1/63 + 1/61 by first appearance),
    # then those in one, by rank
    assert fused == [1, 3, 2, 4]


def test_openai_embedder_sends_64_texts_a_request_in_order(model_server: ModelServer) -> None:
    # Given 130 texts
    texts = [f"note {i}" for i in range(130)]
    # When embedded
    vectors = _embedder(model_server).embed(texts)
    # Then three requests carried 64, 64 and 2 of them, and the vectors come back in order
    sizes = [len(r.body["input"]) for r in model_server.requests if r.api == "embeddings"]
    assert sizes == [64, 64, 2]
    assert vectors[129] == _embedder(model_server).embed(["note 129"])[0]
