"""Which events a workspace function may publish: the one list of what only the fleet emits.

A function publishes through the sidecar's trusted executor (`ctx.step.send_event`), which
asks `refusal` first. Refused: every name under the fleet's own namespaces (`agent.`,
`function.`, `harness/`): approval requests, answers and closings (forging one would skip a
person's yes), replies and files to a chat (speaking as the agent to anyone), sub-agent
spawns, failure and cancellation notices, cron ticks and invocations. One exception keeps
the documented way for a function to talk to the agent: `agent.message.received` in a
session of its own (key starting with `system`, sender id `system`). A message in a
person's session, or in their name, would count as them typing it, and a typed "yes"
answers a pending approval.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.events import MESSAGE_RECEIVED

FLEET_NAMESPACES = ("agent.", "function.", "harness/")
SYSTEM_SESSION_PREFIX = "system"
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
