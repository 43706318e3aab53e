"""Which conversation a model request belongs to, for replies scripted per conversation
(`ModelServer.script_for`).

Concurrent runs (a turn and the background task it started, two chats) may ask the model in
either order: on the gateway path (`MODEL_CALLS=gateway`) each think waits behind the calls
offered before it, inline a run thinks again at once. Only the order within one conversation
is specified, so a test with several conversations keys each one's replies to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Match = Callable[[str, Any], bool]
"""Whether a request is one a scripted reply is for: `(api, parsed body) -> bool`."""


def first_user_text(body: Any) -> str:
    """The text of a request's first user message, Anthropic or OpenAI shaped (blocks
    joined by newlines; "" when there is none). Must not raise on any JSON body."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(
                str(block.get("text", ""))
                for block in content
                if isinstance(block, dict) and block.get("type") == "text"
            )
        return ""
    return ""


def opened_with(text: str) -> Match:
    """Requests of the conversation whose first user message contains `text` (a chat's
    opening message, a sub-agent's task): every later request of it repeats that message."""
    return lambda _api, body: text in first_user_text(body)
