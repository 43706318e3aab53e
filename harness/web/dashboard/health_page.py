"""`/dashboard/health`: workers, queue depth, scheduler, sidecar with its load errors and
undelivered replies (`harness.observe.fleet_health`). When Redis does not answer the page
says so (503) instead of failing."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from harness.errors import BusUnavailableError
from harness.observe.fleet_health import fleet_health
from harness.web.dashboard import pages, render
from harness.web.deps import WebContext, web_context

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)
"""Mounted under `/dashboard` by `routes.router`."""
Ctx = Annotated[WebContext, Depends(web_context)]


@router.get("/health")
@pages.as_page
def health_page(request: Request, context: Ctx) -> HTMLResponse:
    """The fleet's health; 503 with the error's class when Redis does not answer."""
    render.require(request, context)
    try:
        health = fleet_health(context.runtime_factory())
    except BusUnavailableError as exc:
        error = type(exc.__cause__ or exc).__name__
        log.warning("dashboard health: Redis unavailable (%s)", error)
        response = pages.page(request, context, "health.html", health=None, error=error)
        response.status_code = 503
        return response
    return pages.page(request, context, "health.html", health=health, error="")
