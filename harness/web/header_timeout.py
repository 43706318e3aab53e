"""How long a client may take to send a request's headers: uvicorn's h11 protocol, timed.

uvicorn bounds an idle keep-alive connection and our `read_body` bounds a body, but nothing
bounds the request line and headers: a client sending them a byte at a time (slowloris) holds
a connection, and its buffer, for as long as it likes. `HeaderTimeoutProtocol` starts a timer
when a connection opens, or when the first byte of a request arrives on a kept-alive one, and
stops it once the whole head is parsed. If it fires, the connection is answered 408 and
closed, with one log line.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from harness.settings import get_settings

log = logging.getLogger(__name__)

_TIMEOUT_BODY = b"the request headers did not arrive in time"
_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY)
)


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's head.

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

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Open the connection and start waiting for its first request's head."""
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        """Feed h11; the timer runs while a request's head is incomplete, and stops with it."""
        super().data_received(data)
        self._follow_head()

    def on_response_complete(self) -> None:
        """Finish a response; a pipelined request already half-received is timed from now."""
        super().on_response_complete()
        if self.conn.trailing_data[0]:
            self._follow_head()

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the timer with the connection."""
        self._disarm_header_timer()
        super().connection_lost(exc)

    def _follow_head(self) -> None:
        waiting_for_head = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
        if waiting_for_head:
            if self._header_timer is None:
                self._arm_header_timer()
        else:
            self._disarm_header_timer()

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
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
        if self.conn.trailing_data[0]:
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
