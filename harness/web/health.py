"""`GET /healthz`: is this process up, and does Redis answer?"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Depends, status
from fastapi.responses import JSONResponse

from harness.errors import BusUnavailableError
from harness.web.deps import WebContext, web_context

log = logging.getLogger(__name__)

router = APIRouter()


@router.get("/healthz")
def healthz(context: Annotated[WebContext, Depends(web_context)]) -> JSONResponse:
    """200 `{"status": "ok", "redis": "ok"}` when Redis answers PING; otherwise 503
    `{"status": "degraded", "redis": "<error class>"}`. Never raises; the body never carries
    the error's message, which could name the Redis host."""
    try:
        context.runtime_factory().ping()
    except Exception as exc:  # a health check reports every failure instead of raising
        log.warning("health check: Redis unavailable (%s)", type(exc).__name__)
        return JSONResponse(
            {"status": "degraded", "redis": _error_class(exc)},
            status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        )
    return JSONResponse({"status": "ok", "redis": "ok"})


def _error_class(exc: Exception) -> str:
    # The body names the Redis client's error (`ConnectionError`), which the runtime raises as
    # the cause of its `BusUnavailableError`.
    cause = exc.__cause__ if isinstance(exc, BusUnavailableError) else None
    return type(cause or exc).__name__
