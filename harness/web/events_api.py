"""`POST /api/events`: publish one event or a batch onto the bus.

A batch is all-or-nothing at validation: every event is validated before any is published.
Publishing itself is per event; when Redis fails midway the client gets 503 and can resend
the batch, and event ids make the resend idempotent.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request, status
from pydantic import BaseModel

from harness.errors import InvalidEventError
from harness.events import Event, parse_event
from harness.runtime.bus import publish_async
from harness.web.auth import require_api_key
from harness.web.body import read_body
from harness.web.deps import WebContext, web_context
from harness.web.json_body import parse_json
from harness.web.unavailable import BUS_ERRORS, bus_unavailable

log = logging.getLogger(__name__)

MAX_BATCH = 100

router = APIRouter()


class PublishedEvent(BaseModel):
    """One accepted event: its id, whether that id was already accepted, the runs it made."""

    id: str
    duplicate: bool
    runs: list[str]


class PublishResponse(BaseModel):
    """The answer to `POST /api/events`, one entry per event in request order."""

    events: list[PublishedEvent]


@router.post(
    "/api/events",
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[Depends(require_api_key)],
)
async def post_events(
    request: Request, context: Annotated[WebContext, Depends(web_context)]
) -> PublishResponse:
    """Publish `{"name", "data"?, "id"?, "ts"?}` or an array of 1-100 of them.

    202 with one result per event; 400 malformed JSON; 413 body over 1 MiB; 422 an invalid
    event (nothing published); 503 Redis unavailable.
    """
    events = _events_from(await read_body(request))
    try:
        runtime = context.runtime_factory()
        results = [await publish_async(event, runtime=runtime) for event in events]
    except InvalidEventError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc
    except BUS_ERRORS as exc:
        log.warning("publishing %d event(s) failed: %s", len(events), type(exc).__name__)
        raise bus_unavailable() from exc
    return PublishResponse(
        events=[
            PublishedEvent(id=r.event_id, duplicate=r.duplicate, runs=list(r.run_ids))
            for r in results
        ]
    )


def _events_from(body: bytes) -> list[Event]:
    """Parse and validate every event in the body before any is published."""
    raw: Any = parse_json(body)
    if isinstance(raw, dict):
        return [_parse(raw, position=None)]
    if isinstance(raw, list) and 1 <= len(raw) <= MAX_BATCH:
        return [_parse(item, position=i) for i, item in enumerate(raw)]
    raise HTTPException(
        status.HTTP_422_UNPROCESSABLE_CONTENT,
        f"body must be an event object or an array of 1 to {MAX_BATCH} events",
    )


def _parse(raw: Any, *, position: int | None) -> Event:
    try:
        return parse_event(raw)
    except InvalidEventError as exc:
        where = "" if position is None else f"event [{position}]: "
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"{where}{exc}") from None
