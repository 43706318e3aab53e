"""Which events a workspace function may publish, and in what form: the one list of what only
the fleet emits.

A function publishes through the sidecar's trusted executor (`ctx.step.send_event`), which
publishes what `checked_event` returns. Refused: every name under the fleet's own namespaces
(`agent.`, `function.`, `harness/`): approval requests, answers and closings (forging one
would skip a person's yes), replies and files to a chat (speaking as the agent to anyone),
sub-agent spawns, failure and cancellation notices, cron ticks and invocations. One exception
keeps the documented way for a function to talk to the agent: `agent.message.received` in a
session of its own (key starting with `system`, sender id `system`). A message in a person's
session, or in their name, would count as them typing it, and a typed "yes" answers a pending
approval.

Such a message is rebuilt from its plain fields (`message`, `session_key`, `channel`,
`sender`, `destination`): its `channel_meta` is dropped, so it claims no sender and no person
who can answer (the turn is unattended and follows `AGENT_APPROVAL_UNATTENDED`), and it
carries no platform attachments to fetch. Its reply goes to `channel` and `destination` only
when the channel is `system` (delivers nowhere) or the chat is one the fleet serves
(`served_chats`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from harness.errors import EventRefusedError
from harness.events import MESSAGE_RECEIVED, SYSTEM_CHANNEL, SYSTEM_SESSION_PREFIX, MessageReceived
from harness.sidecar.served_chats import ServedChats

FLEET_NAMESPACES = ("agent.", "function.", "harness/")
SYSTEM_SENDER = "system"


def refusal(event: Mapping[str, Any]) -> str | None:
    """Why a workspace function may not publish `event` (a JSON-like dict), or None when it
    may. Looks only at the name and, for a message, its session and sender; the event's
    own validation happens when it is published."""
    name = str(event.get("name", ""))
    if name == MESSAGE_RECEIVED:
        return _message_refusal(event.get("data"))
    if name.startswith(FLEET_NAMESPACES):
        return (
            f"a function may not publish {name!r}: events under "
            f"{', '.join(repr(n) for n in FLEET_NAMESPACES)} are the fleet's own (approvals, "
            f"replies, notices); to reach the agent publish {MESSAGE_RECEIVED!r} in a "
            f"{SYSTEM_SESSION_PREFIX!r} session"
        )
    return None


def checked_event(event: Mapping[str, Any], served: ServedChats) -> dict[str, Any]:
    """The event the executor publishes for a function asking to publish `event`: the same
    event, or a message rebuilt as the module docstring says. Raises `EventRefusedError`
    (nothing is published) with the reason, or `BusUnavailableError` when the pairings
    cannot be read."""
    reason = refusal(event)
    if reason is not None:
        raise EventRefusedError(reason)
    if str(event.get("name", "")) != MESSAGE_RECEIVED:
        return dict(event)
    try:
        message = MessageReceived.model_validate(event.get("data"))
    except ValidationError as exc:
        fields = ", ".join(".".join(str(p) for p in e["loc"]) or "data" for e in exc.errors())
        raise EventRefusedError(
            f"a function's {MESSAGE_RECEIVED!r} is not valid ({fields[:200]}): it needs "
            "message, session_key, channel, sender.id and destination.chat_id"
        ) from None
    chat = message.destination.chat_id
    if message.channel != SYSTEM_CHANNEL and not served.serves(message.channel, chat):
        raise EventRefusedError(
            f"a function's {MESSAGE_RECEIVED!r} may be answered only in a chat the fleet "
            f"serves (paired or allowlisted, see DM_POLICY) or on channel {SYSTEM_CHANNEL!r}; "
            f"{message.channel[:40]!r} chat {chat[:80]!r} is not one"
        )
    data = message.model_dump(
        mode="json", include={"message", "session_key", "channel", "sender", "destination"}
    )
    return {**event, "data": data}


def _message_refusal(data: object) -> str | None:
    data = data if isinstance(data, Mapping) else {}
    session = str(data.get("session_key", ""))
    sender = data.get("sender")
    sender_id = str(sender.get("id", "")) if isinstance(sender, Mapping) else ""
    if session.startswith(SYSTEM_SESSION_PREFIX) and sender_id == SYSTEM_SENDER:
        return None
    return (
        f"a function may publish {MESSAGE_RECEIVED!r} only in a session of its own: "
        f"session_key starting with {SYSTEM_SESSION_PREFIX!r} and sender id "
        f"{SYSTEM_SENDER!r} (got session_key {session[:80]!r}, sender id {sender_id[:80]!r})"
    )
