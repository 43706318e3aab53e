"""Ranking: BM25 alone, or BM25 and embeddings fused by Reciprocal Rank Fusion.

With an embedder, a search first embeds the passages of its keys that have no vector yet
(`VectorStore.embed_missing`), then embeds the query once and takes two rankings of the same
keys (the scope filter comes first, as for BM25 alone): BM25's best `CANDIDATES` and the
`CANDIDATES` passages whose vectors have the highest cosine with the query's. Reciprocal Rank
Fusion scores each passage `sum(1 / (K + rank))` over the rankings it is in (rank from 1) and
sorts by that.

Why RRF, k=60: BM25 scores and cosines are on scales that do not compare (BM25's grows with
the query's length and the corpus), so fusing scores would need a weight tuned per corpus and
per model; RRF uses only ranks, needs no tuning, and k=60 is the constant of its paper
(Cormack, Clarke and Büttcher, SIGIR 2009) and of most hybrid search engines. A passage both
rankings place high wins; one only the embeddings find (a paraphrase, no shared word) still
gets in.

When the endpoint fails or times out, or new passages are still left to embed once
`EMBED_BUDGET_S` has passed (`vectors.embed_missing`), the search answers from BM25 alone with
a `note` saying so, and logs one line; it never fails for it. The vectors stored before stay:
the next search embeds only what is left.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from harness.llm.errors import ModelError
from harness.search.embeddings import Embedder, unit
from harness.search.index import Hit, SearchIndex
from harness.search.vectors import VectorStore, forget_vectors

log = logging.getLogger(__name__)

K = 60
CANDIDATES = 50  # passages each ranking contributes to the fusion
KEYWORD_ONLY = "(ranked by keywords only: the embeddings endpoint did not answer)"


@dataclass(frozen=True)
class Ranked:
    """A search's passages, best first, and a note for the reader when the ranking was not
    the one configured (None when it was)."""

    hits: list[Hit]
    note: str | None = None


def fuse(rankings: Sequence[Sequence[int]], k: int = K) -> list[int]:
    """Reciprocal Rank Fusion of rankings of ids (best first): every id in any of them, by
    `sum(1 / (k + rank))` descending; ties keep the order of first appearance."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])


class Ranker:
    """Ranks passages of an open index: by BM25 without an embedder, hybrid with one.
    Thread-safe. Without an embedder it drops any vectors a past run left in the file."""

    def __init__(self, index: SearchIndex, embedder: Embedder | None) -> None:
        self.index = index
        self.embedder = embedder
        self._vectors: VectorStore | None = None
        if embedder is None:
            forget_vectors(index.path)
        else:
            self._vectors = VectorStore(index.path, embedder.model)

    def rank(self, text: str, keys: Sequence[str], limit: int) -> Ranked:
        """The `limit` best passages of `keys` for `text`; see the module docstring. Never
        raises for the embeddings endpoint."""
        if self.embedder is None or self._vectors is None:
            return Ranked(self.index.query(text, keys, limit))
        try:
            self._vectors.embed_missing(keys, self.embedder)
            query = unit(self.embedder.embed([text])[0])
        except ModelError as exc:
            log.warning("search ranked by keywords only: embeddings failed: %s", exc)
            return Ranked(self.index.query(text, keys, limit), KEYWORD_ONLY)
        keyword = self.index.query(text, keys, CANDIDATES)
        semantic = self._vectors.nearest(query, keys, CANDIDATES)
        chosen = fuse([[h.passage for h in keyword], semantic])[:limit]
        found = {h.passage: h for h in keyword}
        found |= self._vectors.hits([p for p in chosen if p not in found])
        return Ranked([found[p] for p in chosen if p in found])
