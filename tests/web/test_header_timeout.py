"""Request headers that stop arriving, or trickle in byte by byte, close the connection
instead of holding it open; a request whose head arrived in time is served however long the
app takes."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from harness.web.header_timeout import MAX_HEAD_BYTES, HeaderTimeoutProtocol, with_header_timeout
from tests.waiting import wait_until

HEADER_TIMEOUT_S = 0.5
WAIT_FOR_CLOSE_S = 30.0  # generous: only a server that never closes fails
HEAD = b"POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nX-Pad: " + b"a" * 200


async def slow_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers after more than the header timeout, so a timer left running would fire."""
    if scope["type"] != "http":
        return
    await receive()
    await asyncio.sleep(HEADER_TIMEOUT_S * 3)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
def port() -> Iterator[int]:
    """uvicorn serving `slow_app` with a 0.5 s header timeout on a free port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = int(sock.getsockname()[1])
    config = uvicorn.Config(
        slow_app, port=free, log_level="warning", http=with_header_timeout(HEADER_TIMEOUT_S)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, "the server to start")
    yield free
    server.should_exit = True
    thread.join(timeout=10)


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(WAIT_FOR_CLOSE_S)
    return sock


def _read_until_closed(sock: socket.socket) -> bytes:
    answer = b""
    while chunk := sock.recv(4096):
        answer += chunk
    return answer


def test_half_sent_headers_are_answered_408_and_closed(port: int) -> None:
    # Given a client that sent half of its request head and then nothing
    with _connect(port) as sock:
        sock.sendall(HEAD[:40])

        # When it waits
        answer = _read_until_closed(sock)

    # Then the server answered 408 and closed the connection
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_headers_trickling_byte_by_byte_are_cut_off(port: int) -> None:
    # Given a client sending its head one byte at a time, each byte well within the timeout
    sent = 0
    with _connect(port) as sock:
        # When it keeps trickling, for longer than the whole head would need at this pace
        try:
            for byte in HEAD:
                sock.sendall(bytes([byte]))
                sent += 1
                time.sleep(HEADER_TIMEOUT_S / 10)
        except OSError:  # the server closed the connection under us
            pass
        answer = _read_until_closed(sock)

    # Then the server closed it before the head was complete: every byte did not reset the timer
    assert sent < len(HEAD), f"all {len(HEAD)} bytes were accepted without the connection closing"
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_a_silent_connection_is_closed(port: int) -> None:
    # Given a client that connects and sends nothing
    with _connect(port) as sock:
        # When it waits, Then the server closes the connection without an answer
        assert _read_until_closed(sock) == b""


def test_a_request_whose_head_arrived_is_served_past_the_timeout(port: int) -> None:
    # Given a complete request, to an app that answers after three header timeouts
    with _connect(port) as sock:
        sock.sendall(HEAD + b"\r\n\r\n{}")

        # When the answer comes
        answer = sock.recv(4096)

    # Then it is the app's 200: the head's timer stopped when the head was parsed
    assert answer.startswith(b"HTTP/1.1 200"), answer


def test_the_default_timeout_is_read_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given WEB_HEADER_TIMEOUT in the environment
    from harness.settings import get_settings

    monkeypatch.setenv("WEB_HEADER_TIMEOUT", "3.5")
    get_settings.cache_clear()
    loop = asyncio.new_event_loop()
    try:
        # When the protocol is built for a connection
        protocol = HeaderTimeoutProtocol(
            config=uvicorn.Config(slow_app),
            server_state=uvicorn.server.ServerState(),
            app_state={},
            _loop=loop,
        )
    finally:
        loop.close()
        get_settings.cache_clear()

    # Then its deadline is the setting's
    assert protocol._header_seconds == 3.5


def _head_with(header_bytes: int) -> bytes:
    return (b"POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nX-Big: "
            + b"a" * header_bytes + b"\r\n\r\n{}")  # fmt: skip


def test_a_head_within_the_limit_is_served(port: int) -> None:
    # Given a request whose headers are just under the limit
    with _connect(port) as sock:
        sock.sendall(_head_with(MAX_HEAD_BYTES - 200))

        # Then it is served
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")


def test_a_head_over_the_limit_sent_at_once_is_refused(port: int) -> None:
    # Given a whole request whose headers are 200 KB
    with _connect(port) as sock:
        try:
            sock.sendall(_head_with(200_000))
            # Then it is refused, and the connection closed
            answer = _read_until_closed(sock)
        except ConnectionResetError:  # closed with the rest of the head unread: TCP resets
            answer = b""
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400"), answer[:200]


def test_a_header_line_that_never_ends_is_cut_off_at_the_limit(port: int) -> None:
    # Given a client sending one header line, 8 KB at a time, that never ends
    sent = 0
    with _connect(port) as sock:
        sock.sendall(b"POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Endless: ")
        try:
            while sent < 1_000_000:
                sock.sendall(b"a" * 8192)
                sent += 8192
                time.sleep(0.01)
        except OSError:  # the server closed the connection under us
            pass
        answer = _read_until_closed(sock)

    # Then the server answered 400 and closed long before a megabyte was buffered
    assert sent < 1_000_000, "a megabyte of one header line was accepted"
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
