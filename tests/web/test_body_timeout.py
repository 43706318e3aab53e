"""A request body that stops arriving half-way is answered 408 instead of holding the
connection open."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from fastapi import HTTPException
from starlette.requests import Request

from harness.web.body import read_body


def half_sent_request() -> Request:
    """A request that declares 100 bytes, sends 10, then never sends the rest."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"{" * 10, "more_body": True}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/webhooks/telegram",
        "headers": [(b"content-length", b"100")],
    }
    return Request(scope, receive)


def test_read_body_of_a_half_sent_body_is_408() -> None:
    # Given a client that sent a tenth of its body and stopped
    request = half_sent_request()

    # When the body is read with a short timeout
    async def read() -> bytes:
        return await read_body(request, body_timeout=0.05)

    # Then the read ends with 408
    with pytest.raises(HTTPException) as raised:
        anyio.run(read)
    assert raised.value.status_code == 408, raised.value.detail
