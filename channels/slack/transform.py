"""Slack Events API payloads to inbound actions.

`url_verification` is answered with its challenge. In an `event_callback`, an `app_mention`,
a direct message, or a reply in a thread starts a turn; bot messages, edits, deletions and
other subtypes are ignored with a reason. Slack sends a mention in a thread twice (`message`
and `app_mention`, with different event ids) and retries deliveries, so the event id comes
from the message itself: `slack-<team>-<channel>-<ts>`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from channels.base import Ignored, Inbound, Publish, Respond
from channels.slack.meta import SlackMeta
from harness.addresses import Asker, ChannelMeta
from harness.events import (
    Attachment,
    Destination,
    Event,
    MessageReceived,
    Sender,
)

CHANNEL = "slack"
_USER_SUBTYPES = frozenset({"file_share", "thread_broadcast"})
_SUBTYPE_REASONS = {
    "bot_message": "message from a bot",
    "message_changed": "edited message",
    "message_deleted": "deleted message",
}


def transform_payload(
    payload: Mapping[str, Any],
    *,
    bot_user_id: Callable[[], str | None],
    display_name: Callable[[str], str],
    allowed_channels: frozenset[str] = frozenset(),
    drop_unlisted: bool = False,
) -> Inbound:
    """What to do with one Events API payload. Never raises (the callables must not either).
    `bot_user_id` is called only when the text contains a mention; `display_name` once per
    published message. A channel or user id in `allowed_channels` marks the message as
    allowlisted for the agent's `DM_POLICY` gate; with `drop_unlisted` (`DM_POLICY=allowlist`)
    other messages are dropped here. Published messages carry who sent them in
    `channel_meta["access"]`."""
    kind = payload.get("type")
    if kind == "url_verification":
        return Respond({"challenge": str(payload.get("challenge", ""))})
    if kind != "event_callback":
        return Ignored(f"unsupported payload type: {kind}")
    event = payload.get("event")
    if not isinstance(event, Mapping):
        return Ignored("event_callback without an event")
    reason = _ignore_reason(event, allowed_channels if drop_unlisted else frozenset())
    if reason is not None:
        return Ignored(reason)
    bot = _bot_from_authorizations(payload)
    text = _clean_text(str(event.get("text") or ""), bot or bot_user_id)
    files = _files(event)
    if not text and not files:
        return Ignored("message has no text besides the mention")
    return Publish(_event(payload, event, text, display_name, allowed_channels, files))


def _files(event: Mapping[str, Any]) -> list[Attachment]:
    """The files shared with the message (`file_share`), fetched later from `url_private`
    with the bot token. Files Slack hides from the bot (no URL) are skipped."""
    found = []
    for item in event.get("files") or []:
        if not isinstance(item, Mapping):
            continue
        url = item.get("url_private_download") or item.get("url_private")
        if not url:
            continue
        mime = str(item.get("mimetype") or "")
        kind = (
            "photo"
            if mime.startswith("image/")
            else "audio"
            if mime.startswith("audio/")
            else "document"
        )
        size = item.get("size")
        found.append(
            Attachment(
                kind=kind,
                ref=str(url),
                name=str(item.get("name") or item.get("id") or "file"),
                mime_type=mime,
                size=size if isinstance(size, int) else None,
            )
        )
    return found


def _ignore_reason(event: Mapping[str, Any], allowed: frozenset[str]) -> str | None:
    event_type, subtype = event.get("type"), event.get("subtype")
    if event_type not in ("message", "app_mention"):
        return f"unsupported event type: {event_type}"
    if subtype is not None and subtype not in _USER_SUBTYPES:
        return _SUBTYPE_REASONS.get(str(subtype), f"message subtype {subtype}")
    if event.get("bot_id") or event.get("bot_profile"):
        return "message from a bot"
    channel, user, ts = event.get("channel"), event.get("user"), event.get("ts")
    if not channel or not user or not re.fullmatch(r"\d+(\.\d+)?", str(ts or "")):
        return "event without channel, user or a valid ts"
    if allowed and channel not in allowed and user not in allowed:
        return f"channel {channel} is not in SLACK_ALLOWED_CHANNELS"
    if event_type == "message" and event.get("channel_type") != "im" and not _in_thread(event):
        return "top-level channel message without a mention"
    return None


def _in_thread(event: Mapping[str, Any]) -> bool:
    thread_ts = event.get("thread_ts")
    return thread_ts is not None and thread_ts != event.get("ts")


def _bot_from_authorizations(payload: Mapping[str, Any]) -> str | None:
    for authorization in payload.get("authorizations") or []:
        if isinstance(authorization, Mapping) and authorization.get("is_bot"):
            return str(authorization.get("user_id") or "") or None
    return None


def _clean_text(text: str, bot: str | Callable[[], str | None]) -> str:
    """The text with the bot's own mention removed and Slack's escaping undone."""
    if "<@" in text:
        bot_id = bot if isinstance(bot, str) else bot()
        if bot_id:
            text = re.sub(rf"<@{re.escape(bot_id)}(\|[^>]*)?>", "", text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def _event(
    payload: Mapping[str, Any],
    event: Mapping[str, Any],
    text: str,
    name: Callable[[str], str],
    allowed: frozenset[str],
    files: list[Attachment],
) -> Event:
    channel, user, ts = str(event["channel"]), str(event["user"]), str(event["ts"])
    thread_ts = str(event["thread_ts"]) if event.get("thread_ts") else None
    is_dm = event.get("channel_type") == "im" or channel.startswith("D")
    team = str(payload.get("team_id") or event.get("team") or "")
    if thread_ts is not None:
        session_key = f"slack-{channel}-{thread_ts}"
    elif is_dm:
        session_key = f"slack-{channel}"  # a DM is one conversation
    else:
        session_key = f"slack-{channel}-{ts}"  # a mention opens a thread: its session
    sender_name = name(user)
    access = slack_asker(channel, user, sender_name, is_dm=is_dm, allowed=allowed)
    data = MessageReceived(
        message=text,
        session_key=session_key,
        channel=CHANNEL,
        sender=Sender(id=user, name=sender_name),
        destination=Destination(
            chat_id=channel,
            message_id=ts,
            # A top-level DM is answered in the conversation, anything else in its thread.
            thread_id=thread_ts or (None if is_dm else ts),
        ),
        channel_meta=ChannelMeta.of(
            SlackMeta(team_id=team, channel_type=str(event.get("channel_type") or "")).keys(),
            asker=access,
            can_answer=True,
            group=not is_dm,  # a channel: several people, the agent is told who wrote
        ),
        attachments=files,
    )
    return data.to_event(id=f"slack-{team}-{channel}-{ts}", ts=int(float(ts) * 1000))


def slack_asker(
    channel: str, user: str, name: str, *, is_dm: bool, allowed: frozenset[str]
) -> Asker:
    """Who wrote in `channel`, for the `DM_POLICY` gate: a DM pairs the person, a channel
    pairs as one, like a Telegram group."""
    return Asker(
        subjects=[f"{CHANNEL}:chat:{channel}", f"{CHANNEL}:user:{user}"],
        pairing_subject=f"{CHANNEL}:user:{user}" if is_dm else f"{CHANNEL}:chat:{channel}",
        label=name or user if is_dm else f"{name or user} in {channel}",
        allowlisted=channel in allowed or user in allowed,
    )
