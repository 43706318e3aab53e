"""`POST /api/chat`: send the agent a message and stream its progress and reply as SSE.

    POST /api/chat  {"message": "hi", "session": null}
    -> 200 text/event-stream, header X-Harness-Session: <session key>
       event: status   data: {"state": "thinking", "detail": "", "label": "thinking"}
       event: status   data: {"state": "running", "detail": "bash",
                              "label": "running bash: pytest -q"}
       event: delta    data: {"text": "The ans", "new": true, "step": 2, "attempt": 0}
       event: delta    data: {"text": "wer is", "new": false, "step": 2, "attempt": 0}
       event: reply    data: {"response": "...", "run_id": "...", "session": "..."}
    or, instead of the reply, event: error  data: {"error": "timeout"|"failed"|"unavailable",
    "message": "...", "session": "..."}. Comment lines keep an idle connection open.
       event: approval data: {"approval_id": "...", "tool": "bash", "summary": "$ make",
                              "timeout": "30m"}   a risky tool call waits for a yes:

    POST /api/chat/approvals/{approval_id}
         {"session": "...", "decision": "approve" | "deny" | "session"}
    -> 202 {"ok": true}; the first answer counts, and the stream goes on to the reply.

Open streams hold no Redis connection: the app's `harness.chat_hub.ChatHub` reads the bus
once for all of them (one XREAD reader, one pattern subscription to progress) and hands each
stream its own events; only publishing a message borrows a connection for a moment.

The message is published before the response starts, so a refused body or an unreachable bus
is a plain HTTP error (400/413/422/503), not an event in the stream.

`delta` events (with STREAM_REPLIES on) carry the answer as it is written, in order: append
`text` to what is shown, or, when `new` is true, replace what is shown with it (another think
step, or a retried one). They are a preview: the `reply` event has the exact final text.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Callable, Generator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool

from harness.agent.live_text import TextDeltas
from harness.agent.progress import WRITING, Progress
from harness.chat_client import (
    DEFAULT_TIMEOUT_S,
    ApprovalAsked,
    ChatError,
    ChatReply,
    ChatSession,
    Exchange,
)
from harness.chat_hub import ChatHub
from harness.errors import InvalidEventError
from harness.events import Sender
from harness.runtime import Runtime
from harness.web.auth import require_api_key
from harness.web.body import read_body
from harness.web.deps import WebContext, web_context
from harness.web.unavailable import BUS_ERRORS, bus_unavailable

log = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 20_000
MAX_SESSION_CHARS = 300
KEEPALIVE_S = 15.0
MAX_STREAMS = 200
"""Chat streams waiting at once; more wait for a free thread (a stream holds one)."""
API_SENDER = Sender(id="api", name="API client")
SESSION_HEADER = "X-Harness-Session"


class ChatRequest(BaseModel):
    """The body of `POST /api/chat`. No `session`: a new one is generated."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    session: str | None = Field(default=None, min_length=1, max_length=MAX_SESSION_CHARS)

    @field_validator("message", "session")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be blank")
        return value


def chat_router(timeout: float = DEFAULT_TIMEOUT_S) -> APIRouter:
    """The router serving `POST /api/chat`, waiting up to `timeout` seconds for each reply.
    The app's open streams share one `ChatHub` (one reader of the bus, made on first use),
    stopped when the app shuts down."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            hub = getattr(app.state, "chat_hub", None)
            if hub is not None:
                await anyio.to_thread.run_sync(hub.close)

    router = APIRouter(lifespan=lifespan)

    @router.post("/api/chat", dependencies=[Depends(require_api_key)])
    async def post_chat(
        request: Request, context: Annotated[WebContext, Depends(web_context)]
    ) -> StreamingResponse:
        """Send a message; 200 with an SSE stream of status events and the reply. 400
        malformed JSON, 401 bad token, 413 body over 1 MiB, 422 invalid body, 503 no bus."""
        body = _chat_request(await read_body(request))
        hub = _hub(request)
        exchange = await run_in_threadpool(_send, context.runtime_factory, body, timeout, hub)
        return StreamingResponse(
            _in_own_threads(_events(exchange), _stream_limiter(request)),
            media_type="text/event-stream",
            headers={
                SESSION_HEADER: exchange.session_key,
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            },
        )

    @router.post(
        "/api/chat/approvals/{approval_id}",
        dependencies=[Depends(require_api_key)],
        status_code=status.HTTP_202_ACCEPTED,
    )
    async def post_approval(
        approval_id: str,
        request: Request,
        context: Annotated[WebContext, Depends(web_context)],
    ) -> dict[str, Any]:
        """Answer an approval request announced by an `approval` event. 202 once handed to
        the fleet (a second answer changes nothing); 400/422 bad body, 503 no bus."""
        body = _approval_request(await read_body(request))
        await run_in_threadpool(_answer, context.runtime_factory, approval_id, body)
        return {"ok": True}

    return router


router = chat_router()
"""`POST /api/chat` with the default reply timeout, for `create_app(routers=[...])`."""


def _chat_request(body: bytes) -> ChatRequest:
    try:
        raw: Any = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, f"malformed JSON body: {exc}") from None
    try:
        return ChatRequest.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"
            for err in exc.errors()
        )
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, problems) from None


class ApprovalAnswer(BaseModel):
    """The body of `POST /api/chat/approvals/{approval_id}`."""

    model_config = ConfigDict(extra="forbid")

    session: str = Field(min_length=1, max_length=MAX_SESSION_CHARS)
    decision: Literal["approve", "deny", "session"]


def _approval_request(body: bytes) -> ApprovalAnswer:
    try:
        return ApprovalAnswer.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"
            for err in exc.errors()
        )
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, problems) from None


def _answer(runtime_factory: Callable[[], Runtime], approval_id: str, body: ApprovalAnswer) -> None:
    try:
        chat = ChatSession(runtime_factory(), body.session, channel="api", sender=API_SENDER)
        chat.answer(approval_id, body.decision)
    except InvalidEventError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc
    except BUS_ERRORS as exc:
        raise bus_unavailable() from exc


def _send(
    runtime_factory: Callable[[], Runtime], body: ChatRequest, timeout: float, hub: ChatHub
) -> Exchange:
    try:
        chat = ChatSession(
            runtime_factory(),
            body.session,
            channel="api",
            sender=API_SENDER,
            timeout=timeout,
            can_answer=True,
            feeds=hub,
        )
        return chat.send(body.message)
    except InvalidEventError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc
    except BUS_ERRORS as exc:
        log.warning("chat message not sent: %s", type(exc).__name__)
        raise bus_unavailable() from exc


def _events(exchange: Exchange) -> Generator[str, None, None]:
    """The SSE stream of one exchange; always ends with a `reply` or an `error` event."""
    session = exchange.session_key
    deltas = TextDeltas()
    with exchange:
        try:
            for update in exchange.updates(heartbeat=KEEPALIVE_S):
                if isinstance(update, Progress) and update.state == WRITING:
                    piece, new = deltas.piece(update)
                    if piece or new:
                        step = {"step": update.step, "attempt": update.attempt}
                        yield _sse("delta", {"text": piece, "new": new, **step})
                elif isinstance(update, Progress):
                    status = {"state": update.state, "detail": update.detail}
                    yield _sse("status", {**status, "label": update.label})
                elif isinstance(update, ApprovalAsked):
                    yield _sse("approval", dataclasses.asdict(update))
                elif isinstance(update, ChatReply):
                    reply = {"response": update.response, "run_id": update.run_id}
                    yield _sse("reply", {**reply, "session": session})
                else:
                    yield ": waiting\n\n"
        except ChatError as exc:
            yield _sse("error", {"error": exc.code, "message": str(exc), "session": session})


async def _in_own_threads(
    chunks: Generator[str, None, None], limiter: anyio.CapacityLimiter
) -> AsyncIterator[str]:
    """Iterate a blocking stream in threads of its own limiter: a stream holds a thread while
    it waits for a reply, and must not starve the shared pool other routes (webhooks) use."""
    try:
        while True:
            chunk = await anyio.to_thread.run_sync(next, chunks, None, limiter=limiter)
            if chunk is None:
                return
            yield chunk
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(chunks.close, limiter=limiter)


def _hub(request: Request) -> ChatHub:
    """The app's chat hub, made on first use (on the event loop: no race); its readers start
    with its first exchange and stop at the app's shutdown (`chat_router`'s lifespan)."""
    state = request.app.state
    if getattr(state, "chat_hub", None) is None:
        state.chat_hub = ChatHub()
    hub: ChatHub = state.chat_hub
    return hub


def _stream_limiter(request: Request) -> anyio.CapacityLimiter:
    """The app's limiter for chat streams, made on first use in the app's event loop."""
    state = request.app.state
    if getattr(state, "chat_stream_limiter", None) is None:
        state.chat_stream_limiter = anyio.CapacityLimiter(MAX_STREAMS)
    limiter: anyio.CapacityLimiter = state.chat_stream_limiter
    return limiter


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
