"""Plumbing shared by the fake platform APIs (`slack_api`, `telegram_api`).

`FakeHttpServer` is a real HTTP server on 127.0.0.1 (a free port) serving from a daemon
thread. It records every call and keeps a queue of scripted failures; a subclass answers
each request in `respond` and keeps its own state behind `self._lock`, a `threading.Condition`
so that long polls can wait on it. With `keep_alive` it speaks HTTP/1.1 and keeps a client's
connection open between requests, as the real platform APIs do (else HTTP/1.0: one connection
per request); `connections` counts the connections accepted, so a test or a benchmark can see
whether a client reuses them. `stop()` closes the connections still open.
"""

from __future__ import annotations

import json
import random
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Protocol, Self, TypeVar
from urllib.parse import parse_qsl, urlsplit


class RecordedCall(Protocol):
    """What a fake records per request: at least the API method it called."""

    @property
    def method(self) -> str: ...


CallT = TypeVar("CallT", bound=RecordedCall)


@dataclass(frozen=True)
class Failure:
    """A scripted failure for the next call to `method` (to any method when None)."""

    status: int
    message: str
    retry_after: int | None
    method: str | None


class FakeHttpServer(Generic[CallT]):
    """A fake API server. Use as a context manager or call `start()` / `stop()`.

    Subclasses implement `respond`; they call `_record` once per API call and script
    failures with `_queue_failures`."""

    def __init__(self, *, keep_alive: bool = False) -> None:
        self._lock = threading.Condition()
        self._keep_alive = keep_alive
        self._connections = 0
        self._open: set[socket.socket] = set()
        self._calls: list[CallT] = []
        self._failures: list[Failure] = []
        self._random_failure: tuple[float, Failure, random.Random] | None = None
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def _origin(self) -> str:
        """`http://127.0.0.1:PORT`, without a trailing slash."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close the connections still open (a kept-alive client then sees the
        server gone, as after a real outage) and release the port."""
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            still_open, self._open = set(self._open), set()
        for connection in still_open:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # closed by the client meanwhile
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def calls(self) -> list[CallT]:
        """Every request received, in order, failed ones included."""
        with self._lock:
            return list(self._calls)

    @property
    def connections(self) -> int:
        """How many TCP connections the server accepted so far."""
        with self._lock:
            return self._connections

    def calls_to(self, method: str) -> list[CallT]:
        """The recorded requests to one method, e.g. "chat.postMessage" or "sendMessage"."""
        return [call for call in self.calls if call.method == method]

    def respond(self, request: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        """Answer one HTTP request as (status, headers, body); Content-Length is added."""
        raise NotImplementedError

    def _record(self, call: CallT) -> Failure | None:
        """Record `call` and take the oldest scripted failure meant for it, if any."""
        with self._lock:
            self._calls.append(call)
            for index, failure in enumerate(self._failures):
                if failure.method in (None, call.method):
                    return self._failures.pop(index)
            if self._random_failure is not None:
                rate, failure, rng = self._random_failure
                if failure.method in (None, call.method) and rng.random() < rate:
                    return failure
        return None

    def recover(self) -> None:
        """Drop every scripted failure not yet taken and stop failing at random: the platform
        is healthy again."""
        with self._lock:
            self._failures.clear()
            self._random_failure = None

    def _fail_at_random(self, rate: float, failure: Failure, seed: int) -> None:
        """Fail each later call to `failure.method` (to any, when None) with probability
        `rate`, drawn from a generator seeded with `seed` (a failed run can be replayed)."""
        with self._lock:
            self._random_failure = (rate, failure, random.Random(seed))

    def _queue_failures(self, count: int, failure: Failure) -> None:
        with self._lock:
            self._failures.extend([failure] * count)


def read_params(
    request: BaseHTTPRequestHandler,
) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The query string merged with a JSON body, and apart from them the fields of a form
    body (blank values kept; None when the body is not a form). Raises `ValueError` for a
    body that does not parse."""
    params: dict[str, Any] = dict(parse_qsl(urlsplit(request.path).query))
    length = int(request.headers.get("Content-Length") or 0)
    raw = request.rfile.read(length) if length else b""
    form: dict[str, str] | None = None
    if raw and "json" in (request.headers.get("Content-Type") or ""):
        params.update(json.loads(raw))
    elif raw:
        form = dict(parse_qsl(raw.decode(), keep_blank_values=True))
    return params, form


class _Server(ThreadingHTTPServer):
    # a burst of clients connecting at once (a fleet's threads) must not overflow the listen
    # queue: socketserver's default of 5 resets the connections past it
    request_queue_size = 256


def _handler_for(fake: FakeHttpServer[Any]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if fake._keep_alive else "HTTP/1.0"

        def setup(self) -> None:
            super().setup()
            # a reply's headers and body are two writes: without this, Nagle holds the body
            # back until the client's delayed ACK (tens of ms) on a kept-alive connection;
            # web servers (nginx's tcp_nodelay) set it for the same reason
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with fake._lock:
                fake._connections += 1
                fake._open.add(self.connection)

        def finish(self) -> None:
            with fake._lock:
                fake._open.discard(self.connection)
            super().finish()

        def _serve(self) -> None:
            status, headers, body = fake.respond(self)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
