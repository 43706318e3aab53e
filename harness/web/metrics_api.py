"""`GET /metrics`: the fleet's numbers in the Prometheus text format (`harness.observe.metrics`).

Open when `METRICS_TOKEN` is unset, for a scraper on an internal network (the port is not
routed from outside: the Helm chart's Ingress and the compose file do not publish it);
otherwise `Authorization: Bearer <METRICS_TOKEN>` is required, compared in constant time.
The numbers carry no secret and no chat id either way: function ids, models, queues, roles.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, HTTPException, status
from fastapi.responses import Response

from harness.observe.metrics import CONTENT_TYPE, render
from harness.web.auth import equal_secrets
from harness.web.deps import WebContext, web_context

router = APIRouter()


def require_metrics_token(
    context: Annotated[WebContext, Depends(web_context)],
    authorization: Annotated[str | None, Header()] = None,
) -> None:
    """FastAPI dependency: pass when no `METRICS_TOKEN` is set, or when it is presented as a
    bearer token; 401 otherwise."""
    configured = context.settings.metrics_token
    if configured is None or not configured.get_secret_value():
        return
    scheme, _, token = (authorization or "").partition(" ")
    expected = configured.get_secret_value()
    if scheme.lower() != "bearer" or not equal_secrets(token.strip(), expected):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, "metrics token required", {"WWW-Authenticate": "Bearer"}
        )


@router.get("/metrics", dependencies=[Depends(require_metrics_token)])
def metrics(context: Annotated[WebContext, Depends(web_context)]) -> Response:
    """The exposition text, read from Redis now (a sync route: FastAPI runs it on a thread).
    200 even when Redis does not answer: `harness_redis_up 0` then says so."""
    return Response(render(context.runtime_factory), media_type=CONTENT_TYPE)
