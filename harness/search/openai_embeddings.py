"""The one module that calls an embeddings endpoint: OpenAI's, or any compatible server's,
with the official SDK (`client.embeddings.create`). Its errors become ours here, the same way
as for chat (`harness.llm.openai.classify_error`, which keeps the key out of messages).
Imported only when `EMBEDDINGS_PROVIDER=openai` (`harness.search.embeddings`)."""

from __future__ import annotations

from collections.abc import Sequence

import openai

from harness.llm.guard import check_base_url
from harness.llm.openai import DEFAULT_BASE_URL, classify_error

BATCH = 64  # texts in one embeddings request: well under every provider's limit
# One request's limit, not retried (the next search tries again). A search's embedding of new
# passages starts no request after `vectors.EMBED_BUDGET_S`, so a slow endpoint costs it at
# most that, one request and the query's own before it answers by keywords alone.
TIMEOUT = 15.0


class OpenAIEmbedder:
    """`POST /embeddings` with `model`, `BATCH` texts a request. Thread-safe. Raises
    `PermanentModelError` at construction when real model calls are forbidden and `base_url`
    is not on loopback."""

    def __init__(self, *, api_key: str | None, model: str, base_url: str | None = None) -> None:
        url = base_url or DEFAULT_BASE_URL
        check_base_url(url)
        self.model = model
        self._secret = api_key
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed", base_url=url, max_retries=0, timeout=TIMEOUT
        )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """See `harness.search.embeddings.Embedder.embed`."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            batch = list(texts[start : start + BATCH])
            try:
                result = self._client.embeddings.create(
                    model=self.model, input=batch, encoding_format="float"
                )
            except Exception as exc:
                raise classify_error(exc, self._secret) from exc
            ordered = sorted(result.data, key=lambda item: item.index)
            if len(ordered) != len(batch):
                raise classify_error(
                    ValueError(f"{len(ordered)} vectors for {len(batch)} texts"), self._secret
                )
            vectors += [list(item.embedding) for item in ordered]
        return vectors
