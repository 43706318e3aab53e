"""OpenAI's embeddings endpoint (`POST /v1/embeddings`) as the scripted model server speaks it:
the request's `model` and `input` (a string or a list of strings) checked as the real service
does, vectors as floats or, when `encoding_format` is `base64` (the SDK's default), as base64
of little-endian float32, with `usage`.

Vectors are deterministic: a bag of words hashed into `DIMENSIONS` dimensions, each word first
mapped through `synonyms`, so a test can make two different words mean the same (`"automobile":
"car"`) and a paraphrase land next to its original with no word in common.
"""

from __future__ import annotations

import base64
import hashlib
import re
import struct
from collections.abc import Mapping
from typing import Any

DIMENSIONS = 64
_WORD = re.compile(r"\w+")


def fake_vector(text: str, synonyms: Mapping[str, str]) -> list[float]:
    """The text's words (lower case, through `synonyms`) counted into hashed dimensions."""
    vector = [0.0] * DIMENSIONS
    for word in _WORD.findall(text.lower()):
        word = synonyms.get(word, word)
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    return vector


def embeddings_reply(body: Any, synonyms: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
    """The status and JSON body answering an embeddings request body."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return 400, _error("you must provide a model parameter")
    texts = body.get("input")
    texts = [texts] if isinstance(texts, str) else texts
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return 400, _error("'input' must be a non-empty string or array of strings")
    if any(not t for t in texts):
        return 400, _error("'input' cannot contain an empty string")
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for i, text in enumerate(texts):
        vector = fake_vector(text, synonyms)
        packed = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        embedding: Any = packed if as_base64 else vector
        data.append({"object": "embedding", "index": i, "embedding": embedding})
    tokens = sum(len(_WORD.findall(t)) for t in texts)
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return 200, {"object": "list", "data": data, "model": body["model"], "usage": usage}


def _error(message: str) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    }
