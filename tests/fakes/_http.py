"""Plumbing shared by the fake platform APIs (`slack_api`, `telegram_api`).

`FakeHttpServer` is a real HTTP server on 127.0.0.1 (a free port) serving from a daemon
thread. It records every call and keeps a queue of scripted failures; a subclass answers
each request in `respond` and keeps its own state behind `self._lock`, a `threading.Condition`
so that long polls can wait on it.
"""

from __future__ import annotations

import json
import random
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

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._calls: list[CallT] = []
        self._failures: list[Failure] = []
        self._random_failure: tuple[float, Failure, random.Random] | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
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
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
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


def _handler_for(fake: FakeHttpServer[Any]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
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
