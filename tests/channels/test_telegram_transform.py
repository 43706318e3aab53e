"""Telegram updates become events, or are ignored with a reason."""

from __future__ import annotations

from typing import Any

import pytest

from channels.base import Ignored, Inbound, Publish
from channels.telegram.transform import Audience, transform_update
from harness.events import MESSAGE_RECEIVED, MessageReceived, validate_event
from tests.channels import payloads


def transform(update: dict[str, Any], **options: Any) -> Inbound:
    options.setdefault("bot_id", payloads.BOT_ID)
    options.setdefault("bot_username", lambda: "harness_test_bot")
    return transform_update(update, **options)


def published(inbound: Inbound) -> MessageReceived:
    assert isinstance(inbound, Publish), f"expected a Publish, got {inbound!r}"
    assert inbound.event.name == MESSAGE_RECEIVED
    validate_event(inbound.event)
    return MessageReceived.model_validate(inbound.event.data)


def test_private_text_message_starts_a_turn() -> None:
    # Given a text message in a private chat
    update = payloads.tg_private_text(update_id=10000, text="Hello there")

    # When it is transformed
    inbound = transform(update)

    # Then it publishes the message with the chat's session and a reply to the message
    data = published(inbound)
    assert isinstance(inbound, Publish)
    assert inbound.event.id == f"telegram-{payloads.BOT_ID}-10000"
    assert inbound.event.ts == 1441645532 * 1000
    assert data.message == "Hello there"
    assert data.channel == "telegram"
    assert data.session_key == "telegram-1111111"
    assert data.sender.id == "1111111"
    assert data.sender.name == "Alice Liddell"
    assert data.sender.username == "alice"
    assert data.destination.chat_id == "1111111"
    assert data.destination.message_id == "1365"
    assert data.destination.thread_id is None
    assert data.channel_meta.platform["chat_type"] == "private"


def test_group_mention_strips_the_bot_username() -> None:
    data = published(transform(payloads.tg_group_mention()))

    assert data.message == "what is the hour of the pearl?"
    assert data.session_key == "telegram--1001234567890"
    assert data.channel_meta.platform["chat_title"] == "Wonderland"


def test_group_message_is_marked_as_a_group_and_private_is_not() -> None:
    # Given a supergroup mention and a private message
    group = published(transform(payloads.tg_group_mention()))
    private = published(transform(payloads.tg_private_text()))
    # Then only the group's says several people talk there (the agent is told who wrote)
    assert group.channel_meta.group is True
    assert private.channel_meta.group is False


def test_mention_is_kept_when_the_username_is_unknown() -> None:
    data = published(transform(payloads.tg_group_mention(), bot_username=lambda: None))

    assert data.message.startswith("@harness_test_bot ")


def test_username_is_looked_up_only_when_the_text_mentions_someone() -> None:
    def fail() -> str:
        raise AssertionError("getMe should not be needed")

    data = published(transform(payloads.tg_private_text(text="no mention"), bot_username=fail))

    assert data.message == "no mention"


def test_forum_topic_message_gets_a_session_and_thread_per_topic() -> None:
    data = published(transform(payloads.tg_forum_topic()))

    assert data.session_key == "telegram--1009876543210-42"
    assert data.destination.thread_id == "42"
    assert data.destination.message_id == "120"
    assert "reply_to_message_id" not in data.channel_meta.platform, (
        "a topic's implicit reply is no reply"
    )


def test_photo_caption_starts_a_turn() -> None:
    data = published(transform(payloads.tg_photo(caption="What is this?")))

    assert data.message == "What is this?"
    assert data.channel_meta.platform["has_photo"] is True


@pytest.mark.parametrize(
    ("update", "reason"),
    [
        (payloads.tg_edited(), "unsupported update type: edited_message"),
        (payloads.tg_callback_query(), "callback query that is not an approval answer"),
        (payloads.tg_from_bot(), "message from a bot"),
        (payloads.tg_new_members(), "service message: new_chat_members"),
        (
            {"update_id": 1, "message": {**payloads.tg_private_text()["message"], "text": "   "}},
            "empty message",
        ),
        ({"message": payloads.tg_private_text()["message"]}, "malformed update: no update_id"),
    ],
    ids=["edited", "callback", "bot", "service", "blank", "no-update-id"],
)
def test_updates_that_start_no_turn_are_ignored_with_a_reason(
    update: dict[str, Any], reason: str
) -> None:
    inbound = transform(update)

    assert isinstance(inbound, Ignored), f"expected Ignored, got {inbound!r}"
    assert inbound.reason.startswith(reason), inbound.reason


def test_captionless_photo_is_published_with_its_largest_size() -> None:
    # Given a photo without a caption; When it is transformed
    data = published(transform(payloads.tg_photo(caption=None)))
    # Then it starts a turn carrying the largest size as an attachment
    assert data.message == ""
    assert [(a.kind, a.ref) for a in data.attachments] == [("photo", "AgAD-large")]


@pytest.mark.parametrize(
    ("update", "kind"),
    [
        (payloads.tg_document(), "document"),
        (payloads.tg_voice(), "voice"),
        (payloads.tg_sticker(), "sticker"),
    ],
    ids=["document", "voice", "sticker"],
)
def test_files_without_text_are_published_as_attachments(update: dict[str, Any], kind: str) -> None:
    data = published(transform(update))

    assert [a.kind for a in data.attachments] == [kind], data.attachments


def test_location_is_said_in_words() -> None:
    data = published(transform(payloads.tg_location()))

    assert data.message == "(shared a location: 51.5, -0.12)"


def test_duplicate_delivery_gives_the_same_event_id() -> None:
    first = transform(payloads.tg_private_text(update_id=555))
    again = transform(payloads.tg_private_text(update_id=555))

    assert isinstance(first, Publish) and isinstance(again, Publish)
    assert first.event.id == again.event.id


def test_same_message_id_in_two_chats_gives_different_event_ids() -> None:
    # Telegram numbers messages per chat; the original's telegram.<message_id> ids collided.
    private = transform(payloads.tg_private_text(update_id=1))
    group = payloads.tg_group_mention(update_id=2)
    group["message"]["message_id"] = 1365

    other = transform(group)

    assert isinstance(private, Publish) and isinstance(other, Publish)
    assert private.event.id != other.event.id


def test_allowlist_policy_drops_unlisted_chats_before_publishing() -> None:
    audience = Audience(allowed_chats=frozenset({"1111111"}), drop_unlisted=True)

    inside = transform(payloads.tg_private_text(), audience=audience)
    outside = transform(payloads.tg_group_mention(), audience=audience)

    assert isinstance(inside, Publish)
    assert inside.event.data["channel_meta"]["access"]["allowlisted"] is True
    assert outside == Ignored("chat -1001234567890 is not in TELEGRAM_ALLOWED_CHATS")


def test_pairing_policy_publishes_unlisted_chats_marked_as_such() -> None:
    # Given the default policy, where the agent's gate answers strangers with a pairing code
    audience = Audience(allowed_chats=frozenset({"1111111"}))
    # When a chat that is not listed writes
    outside = transform(payloads.tg_group_mention(), audience=audience)
    # Then it is published, with who wrote, for the gate
    assert isinstance(outside, Publish)
    access = outside.event.data["channel_meta"]["access"]
    assert access["allowlisted"] is False
    assert access["pairing_subject"] == "telegram:chat:-1001234567890", "a group pairs as one"
    assert "telegram:user:1111111" in access["subjects"]


def test_private_chat_pairs_the_person() -> None:
    published = transform(payloads.tg_private_text())
    assert isinstance(published, Publish)
    access = published.event.data["channel_meta"]["access"]
    assert access["pairing_subject"] == "telegram:user:1111111"
    assert "Alice" in access["label"] and "@alice" in access["label"]


def test_group_message_without_mention_or_reply_is_ignored() -> None:
    update = payloads.tg_group_mention()
    update["message"]["text"] = "lunch anyone?"
    update["message"].pop("entities", None)

    assert transform(update) == Ignored(
        "group message that neither mentions the bot nor replies to it"
    )


def test_group_message_replying_to_the_bot_is_answered() -> None:
    update = payloads.tg_group_mention()
    update["message"]["text"] = "and tomorrow?"
    update["message"]["reply_to_message"] = {
        "message_id": 5,
        "from": {"id": int(payloads.BOT_ID), "is_bot": True, "first_name": "Harness"},
        "chat": update["message"]["chat"],
        "date": 1441645000,
        "text": "It is noon.",
    }

    assert isinstance(transform(update), Publish)


def test_group_trigger_all_answers_every_group_message() -> None:
    update = payloads.tg_group_mention()
    update["message"]["text"] = "lunch anyone?"

    assert isinstance(transform(update, audience=Audience(group_trigger="all")), Publish)


def test_mention_alone_is_ignored() -> None:
    update = payloads.tg_group_mention()
    update["message"]["text"] = "@harness_test_bot"

    assert transform(update) == Ignored("message has no text besides the mention")
