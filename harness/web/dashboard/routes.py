"""The dashboard's routes: sign-in and out, run list, run page (live over SSE), usage,
functions.

Pages are rendered on the server with Jinja2; `static/dashboard.js` (our own, no library)
only swaps in the fragments the SSE streams send (the run list's rows, a run's steps,
network state and child runs).
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
from harness.web.auth import equal_secrets
from harness.web.body import MAX_FORM_BYTES, read_body
from harness.web.dashboard import actions, charts, gate, health_page, views
from harness.web.dashboard.attempts import LoginAttempts
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


def _page(name: str, *, signed_in: bool = True, **values: Any) -> HTMLResponse:
    return HTMLResponse(templates.get_template(name).render(signed_in=signed_in, **values))


def _require(request: Request, context: WebContext) -> None:
    if not gate.signed_in(request, context):
        raise HTTPException(303, headers={"Location": "/dashboard/login"})


@router.get("/login")
def login_form(context: Ctx, error: str = "") -> HTMLResponse:
    """The sign-in form."""
    gate.configured_key(context)
    return _page("login.html", error=error, signed_in=False)


@router.post("/login")
async def login(request: Request, context: Ctx) -> Response:
    """Check the key from the form (at most `MAX_FORM_BYTES`); on success set the sign-in
    cookie and go to the runs. 429 with Retry-After once the client's address has failed
    `attempts.MAX_FAILURES` times within `attempts.WINDOW_S`, whatever key it sends."""
    key = gate.configured_key(context)
    address = request.client.host if request.client else "unknown"
    tries = _login_attempts(request)
    wait = tries.retry_after(address)
    if wait is not None:
        log.warning("dashboard sign-in from %s refused: too many failures", address)
        raise HTTPException(429, "too many failed sign-ins; try again later",
                            headers={"Retry-After": str(wait)})  # fmt: skip
    given = _form_key(await read_body(request, limit=MAX_FORM_BYTES))
    if not equal_secrets(given, key):
        tries.failed(address)
        log.info("dashboard sign-in from %s: wrong key", address)
        return _page("login.html", error="That key is not right.", signed_in=False)
    tries.succeeded(address)
    response = RedirectResponse("/dashboard", status_code=303)
    gate.sign_in(response, context)
    return response


@router.post("/logout")
def logout(context: Ctx) -> Response:
    """Clear the sign-in cookie and go to the sign-in form."""
    response = RedirectResponse("/dashboard/login", status_code=303)
    gate.sign_out(response, context)
    return response


def _form_key(body: bytes) -> str:
    """The `key` field of a URL-encoded form; 400 when the form is not UTF-8 text."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        log.info("dashboard sign-in: a form that is not UTF-8")
        raise HTTPException(400, "the form is not UTF-8 text") from None
    return parse_qs(text).get("key", [""])[0]


def _login_attempts(request: Request) -> LoginAttempts:
    """The app's sign-in failure counts, made on first use."""
    state = request.app.state
    if getattr(state, "login_attempts", None) is None:
        state.login_attempts = LoginAttempts()
    attempts: LoginAttempts = state.login_attempts
    return attempts


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
    """One run: header, step timeline with previews, tokens and cost, a network's state and
    router decisions, child runs and their cost."""
    _require(request, context)
    page = views.run_page(context.runtime_factory(), run_id)
    if page is None:
        raise HTTPException(404, f"no run {run_id} (unknown or expired)")
    return _page("run.html", page=page)


@router.get("/runs/{run_id}/live")
async def run_live(request: Request, context: Ctx, run_id: str) -> StreamingResponse:
    """Server-sent events: the run's status and its live fragment (steps, a network's state
    and decisions, child runs) each time they change, until the run ends or the client goes
    away."""
    _require(request, context)

    async def stream() -> AsyncIterator[str]:
        last = ""
        while not await request.is_disconnected():
            page = await run_in_threadpool(views.run_page, context.runtime_factory(), run_id)
            if page is None:
                return
            body = templates.get_template("live.html").render(page=page)
            if body != last:
                last = body
                payload = {"status": page.run.status, "html": body}
                yield f"event: run\ndata: {json.dumps(payload)}\n\n"
            if not page.live:
                return
            await asyncio.sleep(POLL_S)

    return StreamingResponse(stream(), media_type="text/event-stream", headers=_SSE_HEADERS)


# the console's other pages, in modules of their own
for _pages in (charts.router, actions.router, health_page.router):
    router.include_router(_pages)
