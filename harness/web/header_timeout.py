"""How long, and how large, a request's headers may be: uvicorn's httptools protocol, bounded.

uvicorn bounds an idle keep-alive connection and our `BodyLimits` bounds a body, but nothing
bounds the request line and headers: a client sending them a byte at a time (slowloris) holds
a connection, and its buffer, for as long as it likes, and httptools keeps a header line that
never ends. `HeaderTimeoutProtocol` starts a timer when a connection opens, or when the first
byte of a request arrives on a kept-alive one, and stops it once the whole head is parsed. If
it fires, the connection is answered 408 and closed, with one log line. A head over
`MAX_HEAD_BYTES` (h11's default, which uvicorn's other protocol applies) is answered 400.

The protocol is uvicorn's httptools one (llhttp's C parser, what `uvicorn[standard]` picks)
rather than its pure-Python h11 one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from harness.settings import get_settings

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 16 * 1024
"""The request line and headers of one request, at most."""

_TIMEOUT_BODY = b"the request headers did not arrive in time"
_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY)
)


class HeadTooLargeError(Exception):
    """Raised from a parser callback: httptools stops, and uvicorn answers 400 and closes."""


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline on each request's head, and a size limit.

    `header_timeout` is the deadline in seconds; None (the default) reads `WEB_HEADER_TIMEOUT`
    from the process settings when a connection opens, so the class can be named by import
    path in every process of `harness web --workers N`. Pass it to `uvicorn.Config(http=...)`.
    """

    header_timeout: float | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        seconds = self.header_timeout
        self._header_seconds = get_settings().web_header_timeout if seconds is None else seconds
        self._header_timer: asyncio.TimerHandle | None = None
        self._in_head = False  # between a request's first byte and the end of its headers
        self._head_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Open the connection and start waiting for its first request's head."""
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        """Feed the parser. Bytes that leave a head unfinished count towards its limit (the
        callbacks count the finished parts), so a header line that never ends is cut off."""
        was_in_head = self._in_head
        super().data_received(data)
        if not (was_in_head and self._in_head) or self.transport.is_closing():
            return
        self._head_bytes += len(data)
        if self._head_bytes > MAX_HEAD_BYTES:
            self._end_head()
            log.warning("refusing a request of %s: headers over %d bytes", self._client_label(),
                        MAX_HEAD_BYTES)  # fmt: skip
            self.send_400_response("request headers too large")

    def on_message_begin(self) -> None:
        """A request's first byte: time its head from now."""
        super().on_message_begin()
        self._in_head, self._head_bytes = True, 0
        if self._header_timer is None:
            self._arm_header_timer()

    def on_url(self, url: bytes) -> None:
        """Count the request line towards the head's limit."""
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        """Count each header towards the head's limit."""
        self._count(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        """The head arrived in time: stop its timer and serve the request."""
        self._end_head()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the timer with the connection."""
        self._disarm_header_timer()
        super().connection_lost(exc)

    def _count(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD_BYTES:  # uvicorn logs the parser's error, answers 400
            self._end_head()
            raise HeadTooLargeError(f"request head over {MAX_HEAD_BYTES} bytes")

    def _end_head(self) -> None:
        self._in_head = False
        self._disarm_header_timer()

    def _client_label(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "a client"

    def _arm_header_timer(self) -> None:
        self._header_timer = self.loop.call_later(self._header_seconds, self._header_timed_out)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        client = self._client_label()
        if self._in_head:
            log.warning(
                "closing the connection of %s: its request headers did not arrive within %g s",
                client, self._header_seconds,
            )  # fmt: skip
            self.transport.write(_TIMEOUT_RESPONSE)
        else:  # opened and never used: not an error, but not kept either
            log.info("closing the connection of %s: no request within %g s", client,
                     self._header_seconds)  # fmt: skip
        self.transport.close()


def with_header_timeout(seconds: float) -> type[HeaderTimeoutProtocol]:
    """`HeaderTimeoutProtocol` with a fixed deadline of `seconds`, for a server in this process
    (a class made here cannot be named in another process: use the base class there)."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": seconds})
