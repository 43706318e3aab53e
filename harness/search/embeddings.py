"""Embeddings for the search tool: the `Embedder` seam, the one choice of it from settings,
and the vector arithmetic hybrid ranking needs.

Optional: with `EMBEDDINGS_PROVIDER=none` (the default) there is no embedder and search ranks
by BM25 alone; nothing here imports the `openai` SDK until `embedder_from_settings` is asked
for the `openai` provider.

Vectors are stored as float32 (`array("f")`, 4 bytes a dimension) scaled to unit length, so
cosine similarity is a plain dot product. The arithmetic is pure Python: numpy is not a
dependency of the fleet, and a dot product over a chat's candidates (at most a few thousand
vectors) is milliseconds to a second, small beside the embeddings call a query makes anyway.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from harness.errors import ConfigurationError

if TYPE_CHECKING:
    from harness.settings import Settings


class Embedder(Protocol):
    """Turns texts into vectors, one per text, in order. `model` names what made them
    (vectors of another model are never compared with these)."""

    model: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text. Raises `ModelError` (`harness.llm.errors`) when the
        endpoint fails or times out; the key is never in its message."""
        ...


def embedder_from_settings(settings: Settings) -> Embedder | None:
    """The embedder `EMBEDDINGS_PROVIDER` names, or None for `none`. The `openai` one uses
    `EMBEDDINGS_API_KEY`, `EMBEDDINGS_BASE_URL` and `EMBEDDINGS_MODEL`; building it sends
    nothing. `OPENAI_API_KEY` stands in for the key only where it is sent anyway: with
    `EMBEDDINGS_BASE_URL` unset or equal to `OPENAI_BASE_URL`. Raises `ConfigurationError`
    (one line) when another endpoint is named without `EMBEDDINGS_API_KEY`, and
    `PermanentModelError` when real model calls are forbidden (under tests) and the endpoint
    is not on loopback."""
    if settings.embeddings_provider != "openai":
        return None
    # Imported here, not above: the SDK is loaded only by a fleet that asked for embeddings.
    from harness.search.openai_embeddings import OpenAIEmbedder

    key = settings.embeddings_api_key
    if key is None and not _same_endpoint(settings.embeddings_base_url, settings.openai_base_url):
        raise ConfigurationError(
            "EMBEDDINGS_API_KEY is unset: EMBEDDINGS_BASE_URL names another endpoint than "
            "OPENAI_BASE_URL, and OPENAI_API_KEY is not sent there; set EMBEDDINGS_API_KEY "
            "(any value for a server that needs none)"
        )
    key = key or settings.openai_api_key
    return OpenAIEmbedder(
        api_key=key.get_secret_value() if key is not None else None,
        model=settings.embeddings_model,
        base_url=settings.embeddings_base_url,
    )


def _same_endpoint(embeddings_url: str | None, openai_url: str | None) -> bool:
    """Whether embeddings go where the OpenAI key is sent anyway: no embeddings URL of their
    own, or `OPENAI_BASE_URL` written the same (a trailing slash aside)."""
    if not embeddings_url:
        return True
    return embeddings_url.rstrip("/") == (openai_url or "").rstrip("/")


def pack(vector: Sequence[float]) -> bytes:
    """`vector` scaled to unit length, as float32 bytes (a zero vector stays zero)."""
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return array("f", (x / norm for x in vector)).tobytes()


def unpack(blob: bytes) -> array[float]:
    """The vector `pack` stored."""
    vector = array("f")
    vector.frombytes(blob)
    return vector


def unit(vector: Sequence[float]) -> array[float]:
    """`vector` scaled to unit length, in the stored precision."""
    return unpack(pack(vector))


def similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two unit vectors (their dot product); 0.0 for different lengths, which
    only vectors of another model can have."""
    if len(a) != len(b):
        return 0.0
    return math.fsum(map(operator.mul, a, b))
