"""Every route's body is bounded in size and time by one middleware (`BodyLimits`): a body that
is too large is refused while it is read, before it is all buffered (413), and one that stops
arriving half-way is answered 408 instead of holding the connection open."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from fastapi import APIRouter, FastAPI, Request

from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import create_app
from harness.web.app import default_routers
from harness.web.body import MAX_BODY_BYTES, MAX_FORM_BYTES
from tests.web.conftest import API_KEY

CHUNK = 1024
ENDLESS = 4 * MAX_BODY_BYTES
"""Where an "endless" body ends after all, so that a route reading it all ends too."""
GIVE_UP_S = 10.0
"""How long a half-sent body's client waits before it hangs up, so that a route without a
body timeout ends too (with something other than 408)."""


@dataclass
class Exchange:
    """What an ASGI request did: the bytes the app pulled, the status it answered."""

    pulled: int = 0
    status: int = 0
    body: bytes = b""
    messages: list[MutableMapping[str, Any]] = field(default_factory=list)


def endless_body(exchange: Exchange) -> Callable[[], Awaitable[dict[str, Any]]]:
    """A client that keeps sending 1 KiB chunks for as long as it is read (up to `ENDLESS`)."""

    async def receive() -> dict[str, Any]:
        exchange.pulled += CHUNK
        more = exchange.pulled < ENDLESS
        return {"type": "http.request", "body": b"k" * CHUNK, "more_body": more}

    return receive


def half_sent_body(exchange: Exchange) -> Callable[[], Awaitable[dict[str, Any]]]:
    """A client that sends one chunk, then nothing more (it hangs up after `GIVE_UP_S`)."""

    async def receive() -> dict[str, Any]:
        if exchange.pulled == 0:
            exchange.pulled = 10
            return {"type": "http.request", "body": b"key=" + b"k" * 6, "more_body": True}
        await anyio.sleep(GIVE_UP_S)
        return {"type": "http.disconnect"}

    return receive


def serve(
    app: FastAPI,
    path: str,
    receive: Callable[[Exchange], Callable[[], Awaitable[dict[str, Any]]]],
    headers: list[tuple[bytes, bytes]] = (),  # type: ignore[assignment]
) -> Exchange:
    """POST to `path` of `app` over raw ASGI, with the body `receive` sends."""
    exchange = Exchange()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": b"", "headers": [(b"host", b"testserver"), *headers],
        "client": ("203.0.113.9", 5000), "server": ("testserver", 80),
    }  # fmt: skip

    async def send(message: MutableMapping[str, Any]) -> None:
        exchange.messages.append(message)
        if message["type"] == "http.response.start":
            exchange.status = message["status"]
        elif message["type"] == "http.response.body":
            exchange.body += message.get("body", b"")

    async def run() -> None:
        await app(scope, receive(exchange), send)

    anyio.run(run)
    return exchange


def production_app(runtime: Runtime, settings: Settings, timeout: float = 10.0) -> FastAPI:
    quick = settings.model_copy(update={"web_body_timeout": timeout})
    return create_app(lambda: runtime, quick, routers=default_routers())


def test_login_body_too_large_is_413_before_it_is_all_read(
    runtime: Runtime, settings: Settings
) -> None:
    # Given a client sending the sign-in form an endless body, with no Content-Length
    app = production_app(runtime, settings)
    # When it posts
    exchange = serve(app, "/dashboard/login", endless_body)
    # Then it is refused 413 once the form's limit is passed, not after reading it all
    assert exchange.status == 413, exchange.body
    assert exchange.pulled <= MAX_FORM_BYTES + CHUNK, f"read {exchange.pulled} bytes"


def test_login_body_declared_too_large_is_413_before_a_byte_is_read(
    runtime: Runtime, settings: Settings
) -> None:
    # Given a client declaring a 200 MiB sign-in form
    app = production_app(runtime, settings)
    # When it posts
    declared = [(b"content-length", str(200 * 1024 * 1024).encode())]
    exchange = serve(app, "/dashboard/login", endless_body, declared)
    # Then it is refused 413 without the app pulling any of it
    assert exchange.status == 413, exchange.body
    assert exchange.pulled == 0, f"read {exchange.pulled} bytes"


def test_login_body_that_stops_arriving_is_408(runtime: Runtime, settings: Settings) -> None:
    # Given a web process whose bodies must arrive within 50 ms
    app = production_app(runtime, settings, timeout=0.05)
    # When a client sends a tenth of its sign-in form and stops
    exchange = serve(app, "/dashboard/login", half_sent_body, [(b"content-length", b"100")])
    # Then it is answered 408
    assert exchange.status == 408, exchange.body
    assert b"did not arrive" in exchange.body


def test_event_api_body_that_stops_arriving_is_408(runtime: Runtime, settings: Settings) -> None:
    # Given a web process whose bodies must arrive within 50 ms
    app = production_app(runtime, settings, timeout=0.05)
    # When an API client sends a tenth of its events and stops
    headers = [(b"content-length", b"100"), (b"authorization", f"Bearer {API_KEY}".encode())]
    exchange = serve(app, "/api/events", half_sent_body, headers)
    # Then it is answered 408
    assert exchange.status == 408, exchange.body


def test_a_route_reading_its_body_its_own_way_is_bounded_too(
    runtime: Runtime, settings: Settings
) -> None:
    # Given a route that reads its body with Starlette's request.body(), not read_body
    router = APIRouter()

    @router.post("/probe")
    async def probe(request: Request) -> dict[str, int]:
        return {"size": len(await request.body())}

    app = create_app(lambda: runtime, settings, routers=[router])
    # When a client sends it an endless body
    exchange = serve(app, "/probe", endless_body)
    # Then the app-wide limit refuses it 413 as soon as it is passed
    assert exchange.status == 413, exchange.body
    assert exchange.pulled <= MAX_BODY_BYTES + CHUNK, f"read {exchange.pulled} bytes"
