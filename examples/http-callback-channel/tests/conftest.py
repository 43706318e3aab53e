"""Fixtures for the HTTP-callback channel's tests: a local HTTP server standing in for the
program that receives the replies, the channel's settings in the environment, and a fleet
runtime on fakeredis with the channel functions a worker runs."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import fakeredis
import pytest

from channels import registry as channel_registry
from channels.handlers import FUNCTIONS
from harness.runtime import Runtime, set_runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker

SECRET = "shared-secret-for-tests"


@dataclass
class Received:
    """One request the callback server got."""

    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body, parsed."""
        return json.loads(self.body)


@dataclass
class CallbackServer:
    """A local HTTP server recording every POST; it answers `status` with `answer`."""

    url: str = ""
    status: int = 200
    answer: dict[str, Any] = field(default_factory=lambda: {"id": "r-1"})
    received: list[Received] = field(default_factory=list)


@pytest.fixture
def callback() -> Iterator[CallbackServer]:
    """The program behind HTTP_CALLBACK_URL."""
    state = CallbackServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            state.received.append(Received(dict(self.headers.items()), self.rfile.read(length)))
            body = json.dumps(state.answer).encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/replies"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def configured(
    callback: CallbackServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> CallbackServer:
    """The channel's settings in the environment (no `.env` read), pointing at `callback`."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HTTP_CALLBACK_SECRET", SECRET)
    monkeypatch.setenv("HTTP_CALLBACK_URL", callback.url)
    channel_registry.reset()
    return callback


@pytest.fixture
def runtime() -> Iterator[Runtime]:
    """A runtime on fakeredis running the channel functions (`send-reply`...), installed as
    the process's runtime, the way a worker has it."""
    functions = FunctionRegistry()
    for fn in FUNCTIONS:
        functions.register(fn)
    server = fakeredis.FakeServer()
    rt = Runtime(
        redis=fakeredis.FakeRedis(server=server, decode_responses=True),
        aredis=fakeredis.FakeAsyncRedis(server=server, decode_responses=True),
        kicker=RecordingKicker(),
        registry=functions,
    )
    rt.register_functions()
    set_runtime(rt)
    yield rt
    set_runtime(None)
    channel_registry.reset()
