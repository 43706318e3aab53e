"""How large, and how slow, a request body may be: the one place that decides, for every route.

`BodyLimits` is ASGI middleware that `create_app` puts in front of every route. It hands the
app a `receive` that refuses a body over `MAX_BODY_BYTES` (413, from Content-Length before a
byte is read, else as soon as the stream passes it) or one that has not fully arrived within
`WEB_BODY_TIMEOUT` seconds of the request's head (408). Whichever way a route reads its body
(`read_body`, Starlette's `request.body()`, a FastAPI body parameter), it reads through that
`receive`, so no route can buffer an unbounded body or wait for a half-sent one. A route that
never reads its body holds none of it: the server stops reading from the socket.

`read_body` is how our routes read a body, with a tighter `limit` where one fits (the login
form takes `MAX_FORM_BYTES`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import NoReturn

from fastapi import HTTPException, Request, status
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024
"""Any request body, at most: above every platform's webhook and the API's largest batch."""
MAX_FORM_BYTES = 4 * 1024
"""A form a person fills in (the dashboard's sign-in), at most."""
BODY_TIMEOUT_S = 10.0
"""Seconds a body may take to arrive when `create_app` is not given `WEB_BODY_TIMEOUT`."""


class BodyLimits:
    """ASGI middleware bounding every HTTP request's body to `limit` bytes and `timeout`
    seconds (counted from when the head was parsed). Breaches are raised from `receive` as
    `HTTPException` 413 or 408, which the app answers like any other; each is logged in one
    line. Other scopes (lifespan, websockets) pass through untouched."""

    def __init__(
        self, app: ASGIApp, *, limit: int = MAX_BODY_BYTES, timeout: float = BODY_TIMEOUT_S
    ) -> None:
        self.app, self.limit, self.timeout = app, limit, timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve `scope` with a bounded `receive`."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = asyncio.get_running_loop().time() + self.timeout
        bounded = _BoundedReceive(scope, receive, self.limit, deadline, self.timeout)
        await self.app(scope, bounded, send)


class _BoundedReceive:
    """`receive` for one request: counts its body and times it until the last chunk, then
    passes every later message (the disconnect a streaming response waits for) through."""

    def __init__(
        self, scope: Scope, receive: Receive, limit: int, deadline: float, timeout: float
    ) -> None:
        self._scope, self._receive, self._limit = scope, receive, limit
        self._deadline, self._timeout = deadline, timeout
        self._size = 0
        self._started = self._complete = False

    async def __call__(self) -> Message:
        if self._complete:
            return await self._receive()
        if not self._started:
            self._started = True
            declared = _declared_length(Headers(scope=self._scope))
            if declared is not None and declared > self._limit:
                _too_large(self._scope, self._limit)
        try:
            async with asyncio.timeout_at(self._deadline):
                message = await self._receive()
        except TimeoutError:
            log.warning("refusing %s: its body did not arrive within %g s",
                        _label(self._scope), self._timeout)  # fmt: skip
            raise HTTPException(
                status.HTTP_408_REQUEST_TIMEOUT,
                f"the body did not arrive within {self._timeout:g} s",
            ) from None
        if message["type"] != "http.request":
            self._complete = True  # a disconnect: nothing more will come
            return message
        self._size += len(message.get("body", b""))
        if self._size > self._limit:
            _too_large(self._scope, self._limit)
        self._complete = not message.get("more_body", False)
        return message


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The raw body. Raises 413 as soon as it is known to exceed `limit` (from Content-Length
    or while streaming), 400 for a Content-Length that is not a number or a client that went
    away mid-body. Time (408) and the app-wide size are bounded by `BodyLimits`, through which
    the stream comes."""
    declared = _declared_length(request.headers)
    if declared is not None and declared > limit:
        _too_large(request.scope, limit)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                _too_large(request.scope, limit)
            chunks.append(chunk)
    except ClientDisconnect:
        log.info("%s: the client went away before its body ended", _label(request.scope))
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "the body ended early") from None
    return b"".join(chunks)


def _declared_length(headers: Headers) -> int | None:
    """The Content-Length in `headers`, None when absent; 400 when it is not a plain number."""
    declared = headers.get("content-length")
    if declared is None:
        return None
    # ASCII digits only, and few enough to stay clear of int()'s 4,300-digit limit
    if not (declared.isascii() and declared.isdigit() and len(declared) <= 18):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "invalid Content-Length")
    return int(declared)


def _too_large(scope: Scope, limit: int) -> NoReturn:
    """Log the request of `scope` in one line, and raise 413 saying its body is over `limit`
    bytes."""
    log.warning("refusing %s: body over %d bytes", _label(scope), limit)
    raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"body exceeds {limit} bytes")


def _label(scope: Scope) -> str:
    client = scope.get("client")
    who = f" from {client[0]}" if client else ""
    return f"{scope.get('method', '')} {scope.get('path', '')}{who}"
