"""Approval requests in Telegram: an inline keyboard out, a `callback_query` in.

A button's `callback_data` is `ap:<approval id>:<a|d|s>` (well under Telegram's 64 bytes).
Telegram vouches for who pressed (`callback_query.from`, behind the webhook's secret token);
the data itself may be forged by a bad client, so it only names a request and a decision:
whether that person may answer it is decided against the request's record, not here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from channels.base import Ignored, Inbound, Publish
from channels.telegram.meta import TelegramMeta
from harness.addresses import ChannelMeta
from harness.events import ApprovalGiven, Destination

CHANNEL = "telegram"
_CODES = {"a": "approve", "d": "deny", "s": "session"}
_LABELS = (("✅ Approve", "a"), ("❌ Deny", "d"), ("✅ Allow for this session", "s"))


def keyboard(approval_id: str) -> dict[str, Any]:
    """The inline keyboard of a request: Approve and Deny on one row, the session grant below."""
    buttons = [
        {"text": text, "callback_data": f"ap:{approval_id}:{code}"} for text, code in _LABELS
    ]
    return {"inline_keyboard": [buttons[:2], buttons[2:]]}


def request_text(tool: str, summary: str, timeout: str) -> str:
    """The request as plain text: what will run, and how long it waits."""
    return f"🔐 Approval needed: {tool}\n\n{summary}\n\nWaiting up to {timeout} for an answer."


def transform_callback(
    update_id: int,
    query: Mapping[str, Any],
    bot_id: str,
    allowed_chats: frozenset[str] = frozenset(),
) -> Inbound:
    """A button press as `agent.approval.given` (event id `telegram-<bot>-<update_id>`, so a
    redelivery is deduplicated), or Ignored for a press that is not one of ours. The presser
    is `allowlisted` when `allowed_chats` names them (their private chat's id is theirs).
    Never raises."""
    data = query.get("data")
    sender = query.get("from") or {}
    message = query.get("message") or {}
    if not isinstance(data, str) or not data.startswith("ap:") or not sender.get("id"):
        return Ignored("callback query that is not an approval answer")
    _, _, rest = data.partition(":")
    approval_id, _, code = rest.rpartition(":")
    chat_id = str((message.get("chat") or {}).get("id", ""))
    if code not in _CODES or not approval_id or not chat_id:
        return Ignored("malformed approval answer")
    name = " ".join(str(p) for p in (sender.get("first_name"), sender.get("last_name")) if p)
    if sender.get("username"):
        name = f"{name} (@{sender['username']})".strip()
    given = ApprovalGiven(
        approval_id=approval_id[:64],
        decision=_CODES[code],  # type: ignore[arg-type]
        subject=f"{CHANNEL}:user:{sender['id']}",
        label=name or str(sender["id"]),
        channel=CHANNEL,
        destination=Destination(chat_id=chat_id, message_id=_str(message.get("message_id"))),
        channel_meta=ChannelMeta.of(
            TelegramMeta(
                callback_query_id=str(query.get("id", "")),
                request_text=str(message.get("text", "")),
            ).keys()
        ),
        allowlisted=str(sender["id"]) in allowed_chats,
    )
    return Publish(given.to_event(id=f"telegram-{bot_id}-{update_id}"))


def _str(value: object) -> str | None:
    return None if value is None else str(value)
