from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.tools import ToolContext, ToolRegistry, WebFetchTool, default_registry, web_fetch

from .conftest import Call

PAGE = b"""<!doctype html>
<html><head><title>Release notes</title><style>body { color: red }</style></head>
<body>
<nav><a href="/">Home</a> <a href="/docs">Docs</a></nav>
<script>console.log("tracking")</script>
<h1>Version 2.0</h1>
<p>The <a href="/changes">full list of changes</a>
   is long.</p>
<ul><li>Faster</li><li>Smaller</li></ul>
</body></html>
"""
BIG_BYTES = 3 * 1024 * 1024


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        routes = {
            "/page.html": ("text/html; charset=utf-8", PAGE),
            "/data.json": ("application/json", b'{"answer": 42}'),
            "/logo.png": ("image/png", b"\x89PNG\r\n\x1a\n\x00\x00"),
            "/big.txt": ("text/plain", b"a" * BIG_BYTES),
        }
        if self.path == "/moved" or self.path.startswith("/redirect?to="):
            location = self.path.split("to=", 1)[1] if "to=" in self.path else "/page.html"
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path not in routes:
            self.send_error(404, "Not Found")
            return
        content_type, body = routes[self.path]
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading at its size cap

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_web_fetch_turns_html_into_readable_text(call: Call, server: str) -> None:
    outcome = call("web_fetch", url=f"{server}/page.html")

    assert not outcome.is_error, outcome.content
    assert outcome.content == (
        f"URL: {server}/page.html\n"
        "Title: Release notes\n\n"
        "# Version 2.0\n\n"
        "The full list of changes is long.\n\n"
        "- Faster\n"
        "- Smaller"
    )


def test_web_fetch_follows_redirects(call: Call, server: str) -> None:
    outcome = call("web_fetch", url=f"{server}/moved")

    assert outcome.content.startswith(f"URL: {server}/page.html\nTitle: Release notes")


def test_web_fetch_returns_other_text_types_as_is(call: Call, server: str) -> None:
    outcome = call("web_fetch", url=f"{server}/data.json")

    assert outcome.content == f'URL: {server}/data.json\n\n{{"answer": 42}}'


def test_web_fetch_http_error_status_is_an_error(call: Call, server: str) -> None:
    outcome = call("web_fetch", url=f"{server}/missing")

    assert outcome.is_error
    assert outcome.content == f"HTTP 404 Not Found from {server}/missing"


def test_web_fetch_stops_reading_at_the_size_cap(call: Call, server: str) -> None:
    outcome = call("web_fetch", url=f"{server}/big.txt", max_chars=200_000)

    assert not outcome.is_error
    assert "[the response is larger than 2048 KB; only its beginning was read]" in outcome.content
    assert "[text cut at 200000 of 2097152 characters]" in outcome.content


def test_web_fetch_refuses_binary_content(call: Call, server: str) -> None:
    outcome = call("web_fetch", url=f"{server}/logo.png")

    assert outcome.is_error
    assert "is image/png, not text" in outcome.content


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/a.txt"])
def test_web_fetch_refuses_schemes_other_than_http(call: Call, url: str) -> None:
    outcome = call("web_fetch", url=url)

    assert outcome.is_error
    assert "only http and https URLs can be fetched" in outcome.content


def test_web_fetch_connection_failure_is_an_error(call: Call) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port any more.

    outcome = call("web_fetch", url=f"http://127.0.0.1:{port}/")

    assert outcome.is_error
    assert outcome.content.startswith(f"fetching http://127.0.0.1:{port}/ failed: ConnectError")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:6379/",
        "http://localhost/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[::1]/",
    ],
)
def test_web_fetch_refuses_private_and_local_addresses_by_default(url: str, tmp_path: Path) -> None:
    registry = default_registry(allow_shell=False)
    outcome = registry.execute("web_fetch", {"url": url}, ToolContext(workspace=tmp_path))
    assert outcome.is_error
    assert "private or local address" in outcome.content


def test_web_fetch_refuses_a_redirect_into_the_local_network(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a page on a "public" host (the test server's IP, declared public to the check)
    # that redirects to localhost
    real = web_fetch._addresses
    monkeypatch.setattr(
        web_fetch,
        "_addresses",
        lambda host, port: ["93.184.216.34"] if host == "127.0.0.1" else real(host, port),
    )
    port = server.rsplit(":", 1)[1]
    target = f"http://localhost:{port}/page.html"
    registry = ToolRegistry([WebFetchTool()])
    # When it is fetched
    outcome = registry.execute(
        "web_fetch", {"url": f"{server}/redirect?to={target}"}, ToolContext(workspace=tmp_path)
    )
    # Then the redirect's hop into the local network is refused
    assert outcome.is_error and "localhost is a private or local address" in outcome.content
