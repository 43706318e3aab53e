"""Telegram updates to inbound actions.

A message from a person starts a turn (in a group, only when it mentions or replies to the bot,
or is a command: `/status@<bot>` is ours with the mention dropped, `/status@<another bot>` is
ignored):
text, or any file (photo, document, voice, ...) with or without a caption, the files listed in
the event's `attachments`; a location, contact, poll or dice is said in words. A press on an
approval button becomes `agent.approval.given` (`channels.telegram.approvals`).
Everything else (edits, service messages, other callback queries, bots, other update types) is
ignored with a reason. Event ids are `telegram-<bot id>-<update_id>`: Telegram numbers updates
per bot, so a redelivered update gets the same id and is deduplicated downstream.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from channels.base import Ignored, Inbound, Publish
from channels.telegram.approvals import transform_callback
from channels.telegram.attachments import attachments_of, describe_other
from channels.telegram.meta import TelegramMeta
from harness.addresses import Asker, ChannelMeta
from harness.events import Destination, MessageReceived, Sender
from harness.events.commands import parse_command

CHANNEL = "telegram"
_SERVICE_KEYS = frozenset(
    "new_chat_members left_chat_member new_chat_title new_chat_photo delete_chat_photo "
    "group_chat_created supergroup_chat_created channel_chat_created pinned_message "
    "message_auto_delete_timer_changed migrate_to_chat_id migrate_from_chat_id "
    "forum_topic_created forum_topic_edited forum_topic_closed forum_topic_reopened "
    "general_forum_topic_hidden general_forum_topic_unhidden video_chat_started "
    "video_chat_ended video_chat_scheduled video_chat_participants_invited users_shared "
    "chat_shared write_access_allowed proximity_alert_triggered boost_added "
    "chat_background_set successful_payment refunded_payment giveaway_created".split()
)
_CONTENT_KEYS = (
    "sticker animation audio document video video_note voice contact location venue "
    "poll dice game story invoice".split()
)


GroupTrigger = Literal["mention", "all"]
_GROUP_TYPES = frozenset({"group", "supergroup"})


@dataclass(frozen=True)
class Audience:
    """Whom the bot listens to. `allowed_chats` marks chats as allowlisted (the agent's
    `DM_POLICY` gate decides about the rest); with `drop_unlisted` (`DM_POLICY=allowlist`),
    other chats are dropped here, before anything is published. In groups the bot answers
    only messages that mention it or reply to it, unless `group_trigger` is `all`."""

    allowed_chats: frozenset[str] = frozenset()
    drop_unlisted: bool = False
    group_trigger: GroupTrigger = "mention"


def transform_update(
    update: Mapping[str, Any],
    *,
    bot_id: str,
    audience: Audience = Audience(),
    bot_username: Callable[[], str | None] = lambda: None,
) -> Inbound:
    """What to do with one Telegram `update`. Never raises. `bot_username` is called only when
    the text mentions someone or the message comes from a group, to find the bot's own
    @mention. Published messages carry who sent them in `channel_meta["access"]`."""
    update_id = update.get("update_id")
    message = update.get("message")
    if not isinstance(update_id, int):
        return Ignored("malformed update: no update_id")
    if isinstance(update.get("callback_query"), Mapping):
        return transform_callback(
            update_id, update["callback_query"], bot_id, audience.allowed_chats
        )
    if not isinstance(message, Mapping):
        kinds = [key for key in update if key != "update_id"]
        kind = kinds[0] if kinds else "empty"
        return Ignored(f"unsupported update type: {kind}")
    return _message(update_id, message, bot_id, audience, bot_username)


def _message(
    update_id: int,
    message: Mapping[str, Any],
    bot_id: str,
    audience: Audience,
    bot_username: Callable[[], str | None],
) -> Inbound:
    chat = message.get("chat") or {}
    sender = message.get("from") or {}
    chat_id = str(chat.get("id", ""))
    if not chat_id or not sender:
        return Ignored("message without chat or sender")
    if sender.get("is_bot"):
        return Ignored("message from a bot")
    listed = chat_id in audience.allowed_chats
    if audience.drop_unlisted and not listed:
        return Ignored(f"chat {chat_id} is not in TELEGRAM_ALLOWED_CHATS")
    text = _text(message)
    if not isinstance(text, str):
        return text
    attachments = attachments_of(message)
    if not text and not attachments:
        return Ignored("empty message")
    in_group = chat.get("type") in _GROUP_TYPES
    command = parse_command(text) if not attachments else None
    if command is not None:
        # Telegram delivers a group's commands to the bots they are for: ours unless named
        if command.bot is not None and not _ours(command.bot, bot_username()):
            return Ignored(f"command for another bot (@{command.bot})")
        text = f"/{command.name} {command.args}".strip()
    elif in_group and audience.group_trigger == "mention":
        unaddressed = _unaddressed(message, text, bot_id, bot_username)
        if unaddressed:
            return Ignored(unaddressed)
    if "@" in text:
        text = _strip_mention(text, bot_username())
    if not text and not attachments:
        return Ignored("message has no text besides the mention")
    thread_id = message.get("message_thread_id") if message.get("is_topic_message") else None
    session_key = f"telegram-{chat_id}" + (f"-{thread_id}" if thread_id is not None else "")
    data = MessageReceived(
        message=text,
        session_key=session_key,
        channel=CHANNEL,
        sender=Sender(
            id=str(sender.get("id", "")),
            name=" ".join(
                str(part) for part in (sender.get("first_name"), sender.get("last_name")) if part
            ),
            username=sender.get("username"),
        ),
        destination=Destination(
            chat_id=chat_id,
            message_id=str(message.get("message_id")) if "message_id" in message else None,
            thread_id=str(thread_id) if thread_id is not None else None,
        ),
        channel_meta=_meta(
            update_id,
            message,
            chat,
            _access(chat, sender, chat_id, listed=listed, in_group=in_group),
        ),
        attachments=attachments,
    )
    date = message.get("date")
    timestamp = date * 1000 if isinstance(date, int) and date > 0 else None
    return Publish(data.to_event(id=f"telegram-{bot_id}-{update_id}", ts=timestamp))


def _text(message: Mapping[str, Any]) -> str | Ignored:
    """The message's text, or why there is none to act on."""
    if isinstance(message.get("text"), str):
        return str(message["text"]).strip()
    service = sorted(_SERVICE_KEYS.intersection(message))
    if service:
        return Ignored(f"service message: {service[0]}")
    caption = message.get("caption")
    if isinstance(caption, str) and caption.strip():
        return caption.strip()
    if attachments_of(message):
        return ""
    described = describe_other(message)
    if described is not None:
        return described
    content = next((key for key in _CONTENT_KEYS if key in message), "unknown")
    return Ignored(f"unsupported message content: {content}")


def _unaddressed(
    message: Mapping[str, Any], text: str, bot_id: str, bot_username: Callable[[], str | None]
) -> str | None:
    """Why a group message is not for the bot, or None when it mentions the bot or replies to
    one of its messages."""
    reply = message.get("reply_to_message")
    if isinstance(reply, Mapping) and str((reply.get("from") or {}).get("id", "")) == bot_id:
        return None
    if "@" not in text:
        return "group message that neither mentions the bot nor replies to it"
    username = bot_username()
    if not username:
        return None  # not known yet (looked up in the background): answer rather than drop
    if re.search(rf"(?<![\w@])@{re.escape(username)}\b", text, re.IGNORECASE):
        return None
    return "group message that neither mentions the bot nor replies to it"


def _access(
    chat: Mapping[str, Any],
    sender: Mapping[str, Any],
    chat_id: str,
    *,
    listed: bool,
    in_group: bool,
) -> Asker:
    """Who wrote, for the `DM_POLICY` gate (`harness.access.Asker`): in a group the chat is
    what a pairing code approves, in a private chat the person."""
    user = f"{CHANNEL}:user:{sender.get('id', '')}"
    group = f"{CHANNEL}:chat:{chat_id}"
    name = " ".join(str(p) for p in (sender.get("first_name"), sender.get("last_name")) if p)
    if sender.get("username"):
        name = f"{name} (@{sender['username']})".strip()
    if in_group or chat.get("type") == "channel":
        name = f"{name} in {chat.get('title') or chat_id}"
    return Asker(
        subjects=[group, user],
        pairing_subject=group if chat.get("type") != "private" else user,
        label=name,
        allowlisted=listed,
    )


def _ours(bot: str, username: str | None) -> bool:
    """Whether `/cmd@bot` names this bot; True while its username is not known yet (looked
    up in the background): answer rather than drop."""
    return username is None or bot.lower() == username.lower()


def _strip_mention(text: str, username: str | None) -> str:
    if not username:
        return text
    pattern = re.compile(rf"(?<![\w@])@{re.escape(username)}\b", re.IGNORECASE)
    return re.sub(r"[ \t]{2,}", " ", pattern.sub("", text)).strip()


def _meta(
    update_id: int, message: Mapping[str, Any], chat: Mapping[str, Any], asker: Asker
) -> ChannelMeta:
    """What the core reads (who asks; approvals can be answered in a chat; the album) and
    Telegram's own keys (`TelegramMeta`)."""
    reply = message.get("reply_to_message")
    # a topic's messages all reply to the topic's first one: that is no reply
    answered = reply if isinstance(reply, Mapping) and not message.get("is_topic_message") else {}
    own = TelegramMeta(
        update_id=update_id,
        chat_type=chat.get("type", ""),
        chat_title=chat.get("title") or None,
        has_photo=True if "photo" in message else None,
        reply_to_message_id=answered.get("message_id"),
    )
    album = str(message["media_group_id"]) if message.get("media_group_id") else None
    group = chat.get("type", "private") != "private"  # several people: say who wrote
    return ChannelMeta.of(own.keys(), asker=asker, can_answer=True, album=album, group=group)
