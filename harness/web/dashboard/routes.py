"""The dashboard's routes: sign-in and out, run list, run page (live over SSE), usage,
functions; the conversation pages' routes (`conversation_routes`) are registered here.

Pages are rendered on the server with Jinja2; `static/dashboard.js` (our own, no library)
only swaps in the fragments the SSE streams send (the run list's rows, a run's steps,
network state and child runs).
Every page needs `gate.signed_in`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Annotated
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from harness.observe.run_filters import RunFilter
from harness.runtime.durations import parse_duration
from harness.web.auth import equal_secrets
from harness.web.body import MAX_FORM_BYTES, read_body
from harness.web.dashboard import (
    actions,
    charts,
    conversation_routes,
    folding,
    gate,
    health_page,
    render,
    views,
)
from harness.web.dashboard.attempts import LoginAttempts
from harness.web.dashboard.render import HERE, changes, fragment, page, require, stream, update
from harness.web.deps import WebContext, web_context

LIST_LIVE_S = 300.0
log = logging.getLogger(__name__)
router = APIRouter(prefix="/dashboard", include_in_schema=False)
Ctx = Annotated[WebContext, Depends(web_context)]


@router.get("/login")
def login_form(context: Ctx, error: str = "") -> HTMLResponse:
    """The sign-in form."""
    gate.configured_key(context)
    return page("login.html", error=error, signed_in=False)


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
        return page("login.html", error="That key is not right.", signed_in=False)
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
    plumbing: bool = False,
) -> HTMLResponse:
    """Recent runs with filters, plumbing runs folded under the runs they serve (shown as
    rows too with `plumbing`); failed runs highlighted with their error, chat turns with
    their reply. The list updates itself over `/dashboard/live` with the same query."""
    require(request, context)
    runtime = context.runtime_factory()
    wanted = _wanted(context, function, session, status, since)
    rows = folding.run_rows(runtime, wanted, plumbing=plumbing)
    usage = views.usage_by_day(runtime)
    peak = max((u.input_tokens + u.output_tokens for u in usage), default=0) or 1
    given = {"function": function, "session": session, "status": status, "since": since}
    query = urlencode({**{k: v for k, v in given.items() if v}, **_flag(plumbing)})
    toggle = urlencode({**{k: v for k, v in given.items() if v}, **_flag(not plumbing)})
    return page(
        "runs.html", rows=rows, usage=usage, peak=peak, functions=views.functions(runtime),
        wanted=wanted, since=since, query=f"?{query}" if query else "", plumbing=plumbing,
        toggle=f"?{toggle}" if toggle else "",
    )  # fmt: skip


def _flag(plumbing: bool) -> dict[str, str]:
    return {"plumbing": "1"} if plumbing else {}


@router.get("/live")
async def run_list_live(
    request: Request,
    context: Ctx,
    function: str = "",
    session: str = "",
    status: str = "",
    since: str = "",
    plumbing: bool = False,
) -> EventSourceResponse:
    """Server-sent events: the run list's rows (same query as the list) each time they
    change, so new runs and status changes show without a reload; a `: ping` comment keeps
    an idle stream open. Ends after `LIST_LIVE_S` (the browser reconnects and is sent the
    rows again) or when the client goes away."""
    require(request, context)
    _wanted(context, function, session, status, since)  # a bad filter is a 400 up front

    def rows() -> str:
        wanted = _wanted(context, function, session, status, since)
        found = folding.run_rows(context.runtime_factory(), wanted, plumbing=plumbing)
        return fragment("run_rows.html", rows=found)

    return stream(changes(request, "runs", rows, for_s=LIST_LIVE_S))


@router.get("/runs/{run_id}")
def run_page(request: Request, context: Ctx, run_id: str) -> HTMLResponse:
    """One run: header, a waterfall of its steps, the steps with previews and tracebacks,
    tokens and cost, a network's state and router decisions, child runs and their cost."""
    require(request, context)
    found = views.run_page(context.runtime_factory(), run_id)
    if found is None:
        raise HTTPException(404, f"no run {run_id} (unknown or expired)")
    return page("run.html", page=found)


@router.get("/runs/{run_id}/live")
async def run_live(request: Request, context: Ctx, run_id: str) -> EventSourceResponse:
    """Server-sent events: the run's status and its live fragment (waterfall, steps, a
    network's state and decisions, child runs) each time they change, then `end` once the
    run has ended; a `: ping` comment keeps an idle stream open. A reconnecting browser is
    sent the current state first, so nothing missed while it was away stays missing."""
    require(request, context)

    async def events() -> AsyncIterator[ServerSentEvent]:
        last, number = "", 0
        while not await request.is_disconnected():
            found = await run_in_threadpool(views.run_page, context.runtime_factory(), run_id)
            if found is None:
                return
            body = fragment("live.html", page=found)
            if body != last:
                last, number = body, number + 1
                payload = {"status": found.run.status, "html": body}
                yield update("run", json.dumps(payload), number)
            if not found.live:
                yield update("end", found.run.status, number + 1)
                return
            await asyncio.sleep(render.POLL_S)

    return stream(events())


# the console's other pages, in modules of their own
for _pages in (conversation_routes.router, charts.router, actions.router, health_page.router):
    router.include_router(_pages)
