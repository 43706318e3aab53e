"""An ASGI app served by uvicorn on a free local port, for tests that read a response which
never ends (live streams) or drive a real browser: starlette's older TestClient buffers the
whole body before returning, so it cannot read an open stream."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from tests.waiting import wait_until


@contextmanager
def served(app: ASGIApp) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 at a free port in a thread; yield its base URL, then stop it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, "the test server to start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
