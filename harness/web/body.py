"""Reading request bodies with a size limit, for every route that takes JSON from outside."""

from __future__ import annotations

import asyncio
from typing import NoReturn

from fastapi import HTTPException, Request, status

MAX_BODY_BYTES = 1024 * 1024
BODY_TIMEOUT_S = 10.0


async def read_body(
    request: Request, limit: int = MAX_BODY_BYTES, body_timeout: float | None = None
) -> bytes:
    """The raw body. Raises 413 as soon as it is known to exceed `limit` (from Content-Length
    or while streaming), 400 for a Content-Length that is not a number, and 408 when the
    whole body has not arrived within `body_timeout` seconds (default: the app's
    `WEB_BODY_TIMEOUT`, else 10), so a half-sent body does not hold a connection open."""
    timeout = body_timeout
    if timeout is None:
        app = request.scope.get("app")
        timeout = getattr(app.state, "body_timeout", BODY_TIMEOUT_S) if app else BODY_TIMEOUT_S
    try:
        async with asyncio.timeout(timeout):
            return await _read(request, limit)
    except TimeoutError:
        raise HTTPException(
            status.HTTP_408_REQUEST_TIMEOUT, f"the body did not arrive within {timeout:g} s"
        ) from None


async def _read(request: Request, limit: int) -> bytes:
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
