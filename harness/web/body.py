"""Reading request bodies with a size limit, for every route that takes JSON from outside."""

from __future__ import annotations

from typing import NoReturn

from fastapi import HTTPException, Request, status

MAX_BODY_BYTES = 1024 * 1024


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The raw body. Raises 413 as soon as it is known to exceed `limit` (from Content-Length
    or while streaming), and 400 for a Content-Length that is not a number."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            too_large = int(declared) > limit
        except ValueError:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, "invalid Content-Length") from None
        if too_large:
            _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> NoReturn:
    raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"body exceeds {limit} bytes")
