"""Approval requests in Slack: Block Kit buttons out, a `block_actions` interaction in.

Interactions arrive at `POST /webhooks/slack/interactions`, form-encoded (`payload=<json>`)
and signed like the Events API (the same v0 signature check runs first). Each button's
`action_id` names the decision and its `value` the request; Slack vouches for `user.id`, and
whether that person may answer is decided against the request's record, not here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from channels.base import Ignored, Inbound, Publish
from channels.slack.meta import SlackMeta
from harness.addresses import ChannelMeta
from harness.events import ApprovalGiven, Destination

CHANNEL = "slack"
ACTION_PREFIX = "harness_approval_"
_BUTTONS = (
    ("Approve", "approve", "primary"),
    ("Deny", "deny", "danger"),
    ("Allow for this session", "session", None),
)


def request_blocks(text: str, approval_id: str) -> list[dict[str, Any]]:
    """The request as Block Kit: the text, then Approve / Deny / Allow-for-this-session."""
    buttons = []
    for label, decision, style in _BUTTONS:
        button: dict[str, Any] = {
            "type": "button",
            "text": {"type": "plain_text", "text": label},
            "action_id": ACTION_PREFIX + decision,
            "value": approval_id,
        }
        if style:
            button["style"] = style
        buttons.append(button)
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": text[:2900]}},
        {"type": "actions", "block_id": f"approval-{approval_id}", "elements": buttons},
    ]


def request_text(tool: str, summary: str, timeout: str) -> str:
    """The request as mrkdwn: what will run, and how long it waits."""
    return f"🔐 *Approval needed: {tool}*\n```{summary}```\nWaiting up to {timeout} for an answer."


def parse_interaction(body: bytes) -> Mapping[str, Any] | None:
    """The JSON `payload` field of a form-encoded interaction body, or None if it has none."""
    try:
        fields = parse_qs(body.decode("utf-8"), strict_parsing=False)
        raw = fields.get("payload", [""])[0]
        payload = json.loads(raw) if raw else None
    except (UnicodeDecodeError, ValueError):
        return None
    return payload if isinstance(payload, dict) else None


def transform_interaction(
    payload: Mapping[str, Any], allowed: frozenset[str] = frozenset()
) -> Inbound:
    """A button press as `agent.approval.given` (event id from the team, channel and the
    action's own timestamp, so Slack's retries are deduplicated), or Ignored. The presser is
    `allowlisted` when `allowed` (SLACK_ALLOWED_CHANNELS) names their user id. Never raises."""
    actions = payload.get("actions") or []
    if payload.get("type") != "block_actions" or not actions or not isinstance(actions[0], dict):
        return Ignored("interaction that is not an approval answer")
    action = actions[0]
    decision = str(action.get("action_id", "")).removeprefix(ACTION_PREFIX)
    user = payload.get("user") or {}
    container = payload.get("container") or {}
    message = payload.get("message") or {}
    channel = str((payload.get("channel") or {}).get("id") or container.get("channel_id") or "")
    approval_id = str(action.get("value") or "")
    if decision not in ("approve", "deny", "session") or not approval_id or not user.get("id"):
        return Ignored("interaction that is not an approval answer")
    if not channel:
        return Ignored("approval answer without a channel")
    team = str((payload.get("team") or {}).get("id") or user.get("team_id") or "")
    given = ApprovalGiven(
        approval_id=approval_id[:64],
        decision=decision,  # type: ignore[arg-type]
        subject=f"{CHANNEL}:user:{user['id']}",
        label=str(user.get("name") or user.get("username") or user["id"]),
        channel=CHANNEL,
        destination=Destination(chat_id=channel, message_id=_str(container.get("message_ts"))),
        channel_meta=ChannelMeta.of(
            SlackMeta(
                user=str(user["id"]),
                request_text=str(message.get("text") or ""),
                thread_ts=_str(message.get("thread_ts")),
            ).keys()
        ),
        allowlisted=str(user["id"]) in allowed,
    )
    pressed = action.get("action_ts") or payload.get("trigger_id")
    event_id = f"slack-{team}-{channel}-action-{pressed}"
    return Publish(given.to_event(id=event_id))


def _str(value: object) -> str | None:
    return None if value is None else str(value)
