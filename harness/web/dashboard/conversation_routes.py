"""The dashboard's conversation pages: the chats, and one chat's transcript, live over SSE.

Registered on the dashboard's router by `routes`; every page needs `gate.signed_in`. The
transcripts are read from the session store under the fleet's state folder
(`HARNESS_STATE_DIR`), so the web process must see that folder (it does on one host, and on
several when they share `HARNESS_SHARED_ROOT`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse
from sse_starlette import EventSourceResponse

from harness.state_dir import state_dir
from harness.web.dashboard import conversations
from harness.web.dashboard.render import changes, fragment, page, require, stream
from harness.web.deps import WebContext, web_context

router = APIRouter(include_in_schema=False)
Ctx = Annotated[WebContext, Depends(web_context)]


@router.get("/conversations")
def chat_list(request: Request, context: Ctx) -> HTMLResponse:
    """The chats the agent answered, newest first: channel, chat, who wrote last and when."""
    require(request, context)
    return page("conversations.html", chats=conversations.chats(context.runtime_factory()))


@router.get("/conversations/{session_key:path}/live")
async def chat_live(request: Request, context: Ctx, session_key: str) -> EventSourceResponse:
    """Server-sent events: the chat's transcript each time it changes (the whole of it, so
    a reconnecting browser misses nothing), with `: ping` comments while it is quiet. Runs
    until the client goes away."""
    require(request, context)
    _known_form(session_key)
    root = state_dir(context.settings)

    def current() -> str:
        found = conversations.transcript(context.runtime_factory(), root, session_key)
        return fragment("transcript.html", transcript=found)

    return stream(changes(request, "transcript", current))


@router.get("/conversations/{session_key:path}")
def chat_page(request: Request, context: Ctx, session_key: str) -> HTMLResponse:
    """One chat's transcript: messages, replies, tool calls folded with their arguments and
    results, approvals asked and answered; it updates itself over `.../live`."""
    require(request, context)
    _known_form(session_key)
    found = conversations.transcript(
        context.runtime_factory(), state_dir(context.settings), session_key
    )
    return page("conversation.html", transcript=found)


def _known_form(session_key: str) -> None:
    """Answer 404 for a chat key no chat can have (empty: `/dashboard/conversations/`)."""
    if not session_key:
        raise HTTPException(status_code=404, detail="no such conversation")
