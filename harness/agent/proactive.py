"""What the agent says into a chat outside the chat's own turn, kept in that chat's transcript.

A sub-agent started by an async or scheduled delegation, a network a function started with a
`reply`, and a turn in a function's own `system` session each send into a person's chat from
a run that is not the chat's turn, so the chat's turn never records it. Each such message is
appended to the chat's session, in the default agent's store (`AgentDeps.sessions`), as an
assistant message marked `proactive` with its `source`, so the chat's next turn sees what was
said (`session.messages_of` keeps it out of a tool call's cycle).

    keep_proactive(deps.sessions, target, text, source="scheduled", key=event_id, run_id=...)

The key is the reply event's id, which derives from the run and its step: a replayed run
sends the same event and writes the message once.
"""

from __future__ import annotations

from typing import Literal

from harness.agent.deps import agent_deps
from harness.agent.session import SessionLine, SessionStore
from harness.events import SYSTEM_CHANNEL, ReplyReady, ReplyTarget, is_system_session
from harness.llm.types import Message
from harness.runtime.steps import Context

Source = Literal["subagent", "scheduled", "network", "system"]
"""Who spoke: an async sub-agent, a scheduled one, a network, a `system` session's turn."""


def chat_session_key(target: ReplyTarget) -> str | None:
    """The session of the chat `target` sends to: its `session_key` when that is a person's
    chat; for a function's own session (`system...`) or none, the chat's key by the channels'
    convention, `<channel>-<chat_id>[-<thread_id>]` (how `channels.telegram` and
    `channels.slack` key a chat or its thread); None for the `system` channel, which delivers
    nowhere."""
    if target.session_key and not is_system_session(target.session_key):
        return target.session_key
    if target.channel == SYSTEM_CHANNEL:
        return None
    where = target.destination
    thread = f"-{where.thread_id}" if where.thread_id else ""
    return f"{target.channel}-{where.chat_id}{thread}"


def keep_proactive(
    sessions: SessionStore,
    target: ReplyTarget,
    text: str,
    *,
    source: Source,
    key: str,
    run_id: str,
) -> bool:
    """Append `text`, sent to `target` outside the chat's turn, to the chat's session as a
    proactive assistant message, once per `key` (idempotent across replays). Returns True when
    written; False for empty text, a chat with no session, or a key already kept."""
    session_key = chat_session_key(target)
    if session_key is None or not text.strip():
        return False
    line = SessionLine(
        message=Message.assistant(text), run_id=run_id, proactive=True, source=source
    )
    return sessions.append_once(session_key, line, key=f"proactive:{key}")


def send_reply(
    ctx: Context, text: str, target: ReplyTarget | None, *, source: Source | None = None
) -> None:
    """Send `text` to `target` (nothing when None) as `agent.reply.ready`, once per step.
    With a `source` the text was said outside the chat's own turn: it is also kept in the
    chat's transcript (`keep_proactive`), keyed by the reply event, so a replay keeps it
    once."""
    if target is None:
        return
    data = ReplyReady(
        response=text,
        channel=target.channel,
        destination=target.destination,
        channel_meta=target.channel_meta,
        run_id=ctx.run_id,
    )
    event_id = ctx.step.send_event("reply", data.to_event())
    if source is not None:
        keep_proactive(
            agent_deps().sessions, target, text, source=source, key=event_id, run_id=ctx.run_id
        )
