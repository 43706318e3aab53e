"""How every dashboard page is answered: the Jinja templates, the sign-in check, and the
server-sent event streams (with keep-alive pings, through `sse-starlette`).

Shared by the route modules (`routes`, `conversation_routes`), so each page module holds
only what its pages decide.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from harness.commands.runs import duration, local_time
from harness.web.dashboard import gate
from harness.web.deps import WebContext

HERE = Path(__file__).parent
POLL_S = 0.5
"""How often a live page's state is read again."""
PING_S = 15.0
"""Seconds between keep-alive comments on an idle stream: well inside the 60 s idle timeout
of common reverse proxies, so a quiet run page is not cut off."""
RETRY_MS = 2000
"""How long a browser waits before it reconnects a dropped stream (sent as `retry:`)."""
SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}

templates = Environment(
    loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"])
)
templates.filters["when"] = local_time
templates.filters["took"] = duration


def page(name: str, *, signed_in: bool = True, **values: Any) -> HTMLResponse:
    """Template `name` rendered with `values` as an HTML response."""
    return HTMLResponse(templates.get_template(name).render(signed_in=signed_in, **values))


def fragment(name: str, **values: Any) -> str:
    """Template `name` rendered as a piece of a page (an SSE update)."""
    return templates.get_template(name).render(**values)


def require(request: Request, context: WebContext) -> None:
    """Send a visitor who is not signed in to the sign-in form (303)."""
    if not gate.signed_in(request, context):
        raise HTTPException(303, headers={"Location": "/dashboard/login"})


def update(name: str, data: str, number: int) -> ServerSentEvent:
    """Event `name` carrying `data`, numbered `number` (the browser sends the last number it
    saw back as `Last-Event-ID` when it reconnects), with the reconnect delay."""
    return ServerSentEvent(data=data, event=name, id=str(number), retry=RETRY_MS)


def stream(events: AsyncIterator[ServerSentEvent]) -> EventSourceResponse:
    """A text/event-stream response of `events`, with a `: ping` comment every `PING_S`
    seconds while nothing else is sent, so proxies keep an idle stream open."""
    return EventSourceResponse(events, ping=PING_S, headers=SSE_HEADERS)


async def changes(
    request: Request, name: str, read: Callable[[], str], *, for_s: float = math.inf
) -> AsyncIterator[ServerSentEvent]:
    """Event `name` carrying `{"html": read()}` each time that changes, read every `POLL_S`
    seconds in a worker thread (`read` blocks), until the client goes away or `for_s`
    seconds have passed."""
    last, number = "", 0
    deadline = time.monotonic() + for_s
    while time.monotonic() < deadline and not await request.is_disconnected():
        body = await run_in_threadpool(read)
        if body != last:
            last, number = body, number + 1
            yield update(name, json.dumps({"html": body}), number)
        await asyncio.sleep(POLL_S)
