"""The dashboard's routes: login, run list, run page (live over SSE), usage, functions.

Pages are rendered on the server with Jinja2; `static/dashboard.js` (our own, no library)
only swaps in the fragments the SSE streams send (the run list's rows, a run's steps).
Every page needs `gate.signed_in`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool

from harness.commands.runs import duration, local_time
from harness.observe.run_filters import RunFilter
from harness.runtime.durations import parse_duration
from harness.web.dashboard import gate, views
from harness.web.deps import WebContext, web_context

HERE = Path(__file__).parent
POLL_S = 0.5
LIST_LIVE_S = 300.0
_SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
log = logging.getLogger(__name__)
templates = Environment(
    loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"])
)
templates.filters["when"] = local_time
templates.filters["took"] = duration
router = APIRouter(prefix="/dashboard", include_in_schema=False)
Ctx = Annotated[WebContext, Depends(web_context)]


def _page(name: str, **values: Any) -> HTMLResponse:
    return HTMLResponse(templates.get_template(name).render(**values))


def _require(request: Request, context: WebContext) -> None:
    if not gate.signed_in(request, context):
        raise HTTPException(303, headers={"Location": "/dashboard/login"})


@router.get("/login")
def login_form(context: Ctx, error: str = "") -> HTMLResponse:
    """The login form."""
    gate.configured_key(context)
    return _page("login.html", error=error)


@router.post("/login")
async def login(request: Request, context: Ctx) -> Response:
    """Check the key from the form; on success set the HTTP-only cookie and go to the runs."""
    key = gate.configured_key(context)
    fields = parse_qs((await request.body()).decode())
    given = fields.get("key", [""])[0]
    if gate.cookie_value(given) != gate.cookie_value(key):
        return _page("login.html", error="That key is not right.")
    response = RedirectResponse("/dashboard", status_code=303)
    response.set_cookie(
        gate.COOKIE, gate.cookie_value(key), httponly=True, samesite="strict", path="/dashboard"
    )
    return response


@router.get("/static/dashboard.js")
def script() -> FileResponse:
    """The page script."""
    return FileResponse(HERE / "static" / "dashboard.js", media_type="text/javascript")


def _wanted(context: WebContext, function: str, session: str, status: str, since: str) -> RunFilter:
    """The run filter of the list's query; a `since` that is not a duration is a 400."""
    runtime = context.runtime_factory()
    try:
        since_ms = runtime.now_ms() - int(parse_duration(since) * 1000) if since else 0
    except ValueError as exc:
        log.info("dashboard: bad since filter %r", since)
        raise HTTPException(400, f"since: {exc}") from exc
    return RunFilter(function=function, session=session, status=status, since_ms=since_ms)


@router.get("")
def run_list(
    request: Request,
    context: Ctx,
    function: str = "",
    session: str = "",
    status: str = "",
    since: str = "",
) -> HTMLResponse:
    """Recent runs with filters; failed runs highlighted with their error. The list updates
    itself over `/dashboard/live` with the same filters."""
    _require(request, context)
    runtime = context.runtime_factory()
    wanted = _wanted(context, function, session, status, since)
    runs = views.run_list(runtime, wanted)
    usage = views.usage_by_day(runtime)
    peak = max((u.input_tokens + u.output_tokens for u in usage), default=0) or 1
    given = {"function": function, "session": session, "status": status, "since": since}
    query = urlencode({k: v for k, v in given.items() if v})
    return _page(
        "runs.html", runs=runs, usage=usage, peak=peak, functions=views.functions(runtime),
        wanted=wanted, since=since, query=f"?{query}" if query else "",
    )  # fmt: skip


@router.get("/live")
async def run_list_live(
    request: Request,
    context: Ctx,
    function: str = "",
    session: str = "",
    status: str = "",
    since: str = "",
) -> StreamingResponse:
    """Server-sent events: the run list's rows (same filters as the list) each time they
    change, so new runs and status changes show without a reload. Ends after `LIST_LIVE_S`
    (the browser reconnects) or when the client goes away."""
    _require(request, context)
    _wanted(context, function, session, status, since)  # a bad filter is a 400 up front

    async def stream() -> AsyncIterator[str]:
        last = ""
        deadline = time.monotonic() + LIST_LIVE_S
        while time.monotonic() < deadline and not await request.is_disconnected():
            wanted = _wanted(context, function, session, status, since)
            runs = await run_in_threadpool(views.run_list, context.runtime_factory(), wanted)
            body = templates.get_template("run_rows.html").render(runs=runs)
            if body != last:
                last = body
                yield f"event: runs\ndata: {json.dumps({'html': body})}\n\n"
            await asyncio.sleep(POLL_S)

    return StreamingResponse(stream(), media_type="text/event-stream", headers=_SSE_HEADERS)


@router.get("/runs/{run_id}")
def run_page(request: Request, context: Ctx, run_id: str) -> HTMLResponse:
    """One run: header, step timeline with previews, tokens and cost, sub-runs."""
    _require(request, context)
    page = views.run_page(context.runtime_factory(), run_id)
    if page is None:
        raise HTTPException(404, f"no run {run_id} (unknown or expired)")
    return _page("run.html", page=page)


@router.get("/runs/{run_id}/live")
async def run_live(request: Request, context: Ctx, run_id: str) -> StreamingResponse:
    """Server-sent events: the run's status and steps fragment each time they change, until
    the run ends or the client goes away."""
    _require(request, context)

    async def stream() -> AsyncIterator[str]:
        last = ""
        while not await request.is_disconnected():
            page = await run_in_threadpool(views.run_page, context.runtime_factory(), run_id)
            if page is None:
                return
            body = templates.get_template("steps.html").render(page=page)
            if body != last:
                last = body
                payload = {"status": page.run.status, "html": body}
                yield f"event: run\ndata: {json.dumps(payload)}\n\n"
            if not page.live:
                return
            await asyncio.sleep(POLL_S)

    return StreamingResponse(stream(), media_type="text/event-stream", headers=_SSE_HEADERS)
