"""Webhook payloads shaped like the platforms' documented examples."""

from __future__ import annotations

import copy
from typing import Any

BOT_ID = "123456789"  # the id in tests.fakes.telegram_api.DEFAULT_TOKEN
ALICE = {
    "id": 1111111,
    "is_bot": False,
    "first_name": "Alice",
    "last_name": "Liddell",
    "username": "alice",
    "language_code": "en",
}
PRIVATE_CHAT = {
    "id": 1111111,
    "first_name": "Alice",
    "last_name": "Liddell",
    "username": "alice",
    "type": "private",
}
GROUP_CHAT = {"id": -1001234567890, "title": "Wonderland", "type": "supergroup"}
FORUM_CHAT = {"id": -1009876543210, "title": "Tea Party", "type": "supergroup", "is_forum": True}


def tg_private_text(update_id: int = 10000, text: str = "Hello there") -> dict[str, Any]:
    """A text message in a private chat."""
    return {
        "update_id": update_id,
        "message": {
            "message_id": 1365,
            "from": dict(ALICE),
            "chat": dict(PRIVATE_CHAT),
            "date": 1441645532,
            "text": text,
        },
    }


def tg_group_mention(update_id: int = 10001) -> dict[str, Any]:
    """A message in a supergroup that mentions the bot."""
    text = "@harness_test_bot what is the hour of the pearl?"
    return {
        "update_id": update_id,
        "message": {
            "message_id": 77,
            "from": dict(ALICE),
            "chat": dict(GROUP_CHAT),
            "date": 1441645600,
            "text": text,
            "entities": [{"offset": 0, "length": 17, "type": "mention"}],
        },
    }


def tg_forum_topic(update_id: int = 10002) -> dict[str, Any]:
    """A message in a forum topic: the topic's creation message is its implicit reply."""
    return {
        "update_id": update_id,
        "message": {
            "message_id": 120,
            "message_thread_id": 42,
            "is_topic_message": True,
            "from": dict(ALICE),
            "chat": dict(FORUM_CHAT),
            "date": 1441645700,
            "reply_to_message": {
                "message_id": 42,
                "message_thread_id": 42,
                "from": dict(ALICE),
                "chat": dict(FORUM_CHAT),
                "date": 1441645000,
                "forum_topic_created": {"name": "Riddles", "icon_color": 7322096},
            },
            "text": "@harness_test_bot Why is a raven like a writing-desk?",
            "entities": [{"offset": 0, "length": 17, "type": "mention"}],
        },
    }


def tg_edited(update_id: int = 10003) -> dict[str, Any]:
    """An edited_message update."""
    message = tg_private_text()["message"]
    return {"update_id": update_id, "edited_message": {**message, "edit_date": 1441646000}}


def tg_photo(update_id: int = 10004, caption: str | None = "What is this?") -> dict[str, Any]:
    """A photo, with a caption unless `caption` is None."""
    photo = [
        {"file_id": "AgAD-small", "file_unique_id": "AQAD1", "width": 90, "height": 67},
        {"file_id": "AgAD-large", "file_unique_id": "AQAD2", "width": 800, "height": 600},
    ]
    message: dict[str, Any] = {
        "message_id": 1366,
        "from": dict(ALICE),
        "chat": dict(PRIVATE_CHAT),
        "date": 1441645800,
        "photo": photo,
    }
    if caption is not None:
        message["caption"] = caption
    return {"update_id": update_id, "message": message}


def tg_callback_query(update_id: int = 10005) -> dict[str, Any]:
    """A button press on an inline keyboard."""
    return {
        "update_id": update_id,
        "callback_query": {
            "id": "4382bfdwdsb323b2d9",
            "from": dict(ALICE),
            "data": "Data from button callback",
            "chat_instance": "2525252525252525",
            "inline_message_id": "1234csdbsk4839",
        },
    }


def tg_from_bot(update_id: int = 10006) -> dict[str, Any]:
    """A group message written by another bot."""
    update = tg_group_mention(update_id)
    update["message"]["from"] = {
        "id": 5555,
        "is_bot": True,
        "first_name": "Other",
        "username": "other_bot",
    }
    return update


def tg_new_members(update_id: int = 10007) -> dict[str, Any]:
    """A service message: someone joined the group."""
    newcomer = {"id": 2222222, "is_bot": False, "first_name": "Hatter"}
    return {
        "update_id": update_id,
        "message": {
            "message_id": 78,
            "from": dict(ALICE),
            "chat": dict(GROUP_CHAT),
            "date": 1441645900,
            "new_chat_participant": newcomer,
            "new_chat_member": newcomer,
            "new_chat_members": [newcomer],
        },
    }


SLACK_TEAM = "T123ABC456"
SLACK_BOT_USER = "U0LAN0Z89"
AUTHORIZATIONS = [
    {
        "enterprise_id": None,
        "team_id": SLACK_TEAM,
        "user_id": SLACK_BOT_USER,
        "is_bot": True,
        "is_enterprise_install": False,
    }
]


def slack_callback(event: dict[str, Any], event_id: str = "Ev123ABC456") -> dict[str, Any]:
    """An Events API event_callback envelope around `event`."""
    return {
        "token": "ZZZZZZWSxiZZZ2yIvs3peJ",
        "team_id": SLACK_TEAM,
        "api_app_id": "A123ABC456",
        "event": copy.deepcopy(event),
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1515449522,
        "authorizations": copy.deepcopy(AUTHORIZATIONS),
        "is_ext_shared_channel": False,
        "event_context": "4-eyJldCI6ImFwcF9tZW50aW9uIn0",
    }


def slack_app_mention(
    ts: str = "1515449522.000016", thread_ts: str | None = None, event_id: str = "Ev0MENTION"
) -> dict[str, Any]:
    """An app_mention in a channel (in a thread when `thread_ts` is given)."""
    event: dict[str, Any] = {
        "type": "app_mention",
        "user": "U0USER",
        "text": f"What is the hour of the pearl, <@{SLACK_BOT_USER}>?",
        "ts": ts,
        "channel": "C123ABC456",
        "event_ts": ts,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return slack_callback(event, event_id)


def slack_dm(ts: str = "1355517523.000005", thread_ts: str | None = None) -> dict[str, Any]:
    """A direct message to the bot."""
    event: dict[str, Any] = {
        "type": "message",
        "channel": "D024BE91L",
        "user": "U0USER",
        "text": "Hello hello can you hear me?",
        "ts": ts,
        "event_ts": ts,
        "channel_type": "im",
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return slack_callback(event, "Ev0DM" + ts.replace(".", ""))


def slack_thread_reply(
    ts: str = "1515449600.000200",
    thread_ts: str = "1515449522.000016",
    text: str = "And the raven?",
    event_id: str = "Ev0REPLY",
) -> dict[str, Any]:
    """A reply in a channel thread, delivered as a `message` event."""
    event = {
        "type": "message",
        "channel": "C123ABC456",
        "user": "U0USER",
        "text": text,
        "ts": ts,
        "thread_ts": thread_ts,
        "parent_user_id": "U0USER",
        "event_ts": ts,
        "channel_type": "channel",
    }
    return slack_callback(event, event_id)


def slack_bot_message() -> dict[str, Any]:
    """A message posted by an integration."""
    event = {
        "type": "message",
        "subtype": "bot_message",
        "ts": "1358877455.000010",
        "text": "Pushing is the answer",
        "bot_id": "BB12033",
        "username": "github",
        "channel": "C123ABC456",
        "channel_type": "channel",
    }
    return slack_callback(event, "Ev0BOT")


def slack_message_changed() -> dict[str, Any]:
    """An edit of an earlier message."""
    event = {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "channel": "D024BE91L",
        "channel_type": "im",
        "ts": "1358878755.000001",
        "message": {
            "type": "message",
            "user": "U0USER",
            "text": "Hello, world!",
            "ts": "1355517523.000005",
            "edited": {"user": "U0USER", "ts": "1358878755.000001"},
        },
    }
    return slack_callback(event, "Ev0CHANGED")


def slack_url_verification() -> dict[str, Any]:
    """The handshake Slack sends when the request URL is saved."""
    return {
        "token": "Jhj5dZrVaK7ZwHHjRyZWjbDl",
        "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
        "type": "url_verification",
    }


def tg_with(update_id: int, **content: Any) -> dict[str, Any]:
    """A private message from Alice carrying `content` (a document, voice, sticker, ...) and
    no text."""
    message: dict[str, Any] = {
        "message_id": 1400 + update_id % 100,
        "from": dict(ALICE),
        "chat": dict(PRIVATE_CHAT),
        "date": 1441645800,
        **content,
    }
    return {"update_id": update_id, "message": message}


def tg_document(
    update_id: int = 10020, name: str = "notes.txt", mime: str = "text/plain", size: int = 120
) -> dict[str, Any]:
    """A document without a caption."""
    document = {"file_id": f"BQAD-{name}", "file_unique_id": "AgAD9", "file_name": name}
    return tg_with(update_id, document={**document, "mime_type": mime, "file_size": size})


def tg_voice(update_id: int = 10021) -> dict[str, Any]:
    """A voice note."""
    voice = {"file_id": "AwAD-voice", "file_unique_id": "AgAD8", "duration": 3}
    return tg_with(update_id, voice={**voice, "mime_type": "audio/ogg", "file_size": 2048})


def tg_audio(update_id: int = 10024) -> dict[str, Any]:
    """A music or audio file (not a voice note), as Telegram sends one: name and type given."""
    audio = {"file_id": "CQAD-audio", "file_unique_id": "AgAD6", "duration": 4}
    audio |= {"performer": "Alice", "title": "Shopping list", "file_name": "list.mp3"}
    return tg_with(update_id, audio={**audio, "mime_type": "audio/mpeg", "file_size": 3072})


def tg_video_note(update_id: int = 10025) -> dict[str, Any]:
    """A round video message: Telegram gives no file name and no type for these."""
    note = {"file_id": "DQAD-note", "file_unique_id": "AgAD5", "length": 240, "duration": 2}
    return tg_with(update_id, video_note={**note, "file_size": 4096})


def tg_video(update_id: int = 10026) -> dict[str, Any]:
    """A video without a caption and, as phones send them, without a file name."""
    video = {"file_id": "BAAD-video", "file_unique_id": "AgAD4", "width": 640, "height": 360}
    return tg_with(
        update_id, video={**video, "duration": 5, "mime_type": "video/mp4", "file_size": 8192}
    )


def tg_sticker(update_id: int = 10022) -> dict[str, Any]:
    """A sticker."""
    sticker = {"file_id": "CAAC-sticker", "file_unique_id": "AgAD7", "emoji": "🙂"}
    return tg_with(update_id, sticker={**sticker, "width": 512, "height": 512})


def tg_location(update_id: int = 10023) -> dict[str, Any]:
    """A shared location."""
    return tg_with(update_id, location={"latitude": 51.5, "longitude": -0.12})


def slack_file_share(
    name: str = "receipt.png", mime: str = "image/png", url: str = "https://files.slack.com/x"
) -> dict[str, Any]:
    """A DM with a file and no text (`file_share`)."""
    event = {
        "type": "message",
        "subtype": "file_share",
        "channel": "D024BE91L",
        "channel_type": "im",
        "user": "U0USER",
        "text": "",
        "ts": "1355517524.000007",
        "files": [
            {
                "id": "F0FILE",
                "name": name,
                "mimetype": mime,
                "size": 68,
                "url_private": url,
                "url_private_download": url,
            }
        ],
    }
    return slack_callback(event, event_id="EvFILE")


def tg_album_part(update_id: int, file_id: str, caption: str | None = None) -> dict[str, Any]:
    """One photo of an album (media group 13), with a caption on the first part only."""
    update = tg_photo(update_id, caption)
    size = {"file_id": file_id, "file_unique_id": f"U{file_id}", "width": 640, "height": 480}
    update["message"].update(
        {"message_id": 1500 + update_id % 100, "media_group_id": "13", "photo": [size]}
    )
    return update
