"""`GET /livez` (does this process answer?), `GET /healthz` (is this process up, does Redis
answer?) and `GET /readyz` (can a message be answered now, i.e. is a worker live?).

`/livez` is the liveness probe: it touches nothing, so a Redis outage never restarts the web
processes. `/healthz` is the readiness probe a load balancer should check: webhooks are stored
on the bus while Redis answers, even with no worker up, so the web server stays in rotation.
`/readyz` is for whoever wants to know that messages will be answered now (`harness up`
prints "ready" on it, once the answer echoes the id it gave this start:
`harness.fleet.readiness.FLEET_ID_HEADER`).
"""

from __future__ import annotations

import logging
import os
from typing import Annotated

from fastapi import APIRouter, Depends, status
from fastapi.responses import JSONResponse

from harness.errors import BusUnavailableError
from harness.fleet.readiness import FLEET_ID_ENV, FLEET_ID_HEADER
from harness.runtime.presence import live_members_async, unconsumed
from harness.web.deps import WebContext, web_context

log = logging.getLogger(__name__)

router = APIRouter()


@router.get("/livez")
async def livez() -> JSONResponse:
    """200 `{"status": "alive"}` whenever the process serves requests. Reads nothing: not
    Redis, not the settings."""
    return JSONResponse({"status": "alive"})


@router.get("/healthz")
async def healthz(context: Annotated[WebContext, Depends(web_context)]) -> JSONResponse:
    """200 `{"status": "ok", "redis": "ok", "workers": N, "functions": M}` when Redis answers,
    N live workers (`live_members`) and M functions in the trigger table, whatever N is;
    otherwise 503 `{"status": "degraded", "redis": "<error class>"}`. Never raises; the body
    never carries an error's message, which could name the Redis host."""
    try:
        runtime = context.runtime_factory()
        await runtime.ping_async()
        workers = len(await live_members_async(runtime, role="worker"))
        functions = len(await runtime.triggers.specs_async())
    except Exception as exc:  # a health check reports every failure instead of raising
        log.warning("health check: Redis unavailable (%s)", type(exc).__name__)
        return _unavailable(exc)
    body = {"status": "ok", "redis": "ok", "workers": workers, "functions": functions}
    return JSONResponse(body)


@router.get("/readyz")
async def readyz(context: Annotated[WebContext, Depends(web_context)]) -> JSONResponse:
    """200 `{"status": "ready", "workers": N}` when live workers consume every queue a worker
    takes by default (the runs' and the replies' delivery: `unconsumed`); 503 `{"status":
    "waiting for a worker", "workers": 0}` before any is live, 503 `{"status": "waiting for a
    worker of harness-delivery", "workers": N}` while one of those queues has none, and 503
    with the error class as `redis` when Redis does not answer. The 200 carries
    `X-Harness-Fleet` under `harness up`. Never raises."""
    try:
        workers = await live_members_async(context.runtime_factory(), role="worker")
    except Exception as exc:  # reported in the body, like /healthz
        return _unavailable(exc)
    missing = unconsumed(workers)  # with no worker, every queue
    if missing:
        waiting = f" of {', '.join(missing)}" if workers else ""
        return JSONResponse(
            {"status": f"waiting for a worker{waiting}", "workers": len(workers)},
            status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        )
    return JSONResponse({"status": "ready", "workers": len(workers)}, headers=_fleet_header())


def _fleet_header() -> dict[str, str]:
    """`X-Harness-Fleet: <id>` under `harness up` (which tells its own web process from
    another fleet's by it); nothing otherwise. The id is random per start and grants
    nothing."""
    fleet_id = os.environ.get(FLEET_ID_ENV, "")
    return {FLEET_ID_HEADER: fleet_id} if fleet_id else {}


def _unavailable(exc: Exception) -> JSONResponse:
    return JSONResponse(
        {"status": "degraded", "redis": _error_class(exc)},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
    )


def _error_class(exc: Exception) -> str:
    # The body names the Redis client's error (`ConnectionError`), which the runtime raises as
    # the cause of its `BusUnavailableError`.
    cause = exc.__cause__ if isinstance(exc, BusUnavailableError) else None
    return type(cause or exc).__name__
