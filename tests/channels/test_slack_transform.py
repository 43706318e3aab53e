"""Slack Events API payloads become events, challenge answers, or are ignored with a reason."""

from __future__ import annotations

from typing import Any

import pytest

from channels.base import Ignored, Inbound, Publish, Respond
from channels.slack.commands import transform_command
from channels.slack.transform import transform_payload
from harness.events import MessageReceived, validate_event
from tests.channels import payloads


class Names:
    """A display-name lookup that counts its calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, user_id: str) -> str:
        self.calls.append(user_id)
        return "Ada"


def transform(payload: dict[str, Any], **options: Any) -> Inbound:
    options.setdefault("bot_user_id", lambda: payloads.SLACK_BOT_USER)
    options.setdefault("display_name", Names())
    return transform_payload(payload, **options)


def published(inbound: Inbound) -> tuple[str, MessageReceived]:
    assert isinstance(inbound, Publish), f"expected a Publish, got {inbound!r}"
    validate_event(inbound.event)
    return inbound.event.id, MessageReceived.model_validate(inbound.event.data)


def test_url_verification_is_answered_with_the_challenge() -> None:
    inbound = transform(payloads.slack_url_verification())

    assert inbound == Respond({"challenge": payloads.slack_url_verification()["challenge"]})


def test_app_mention_starts_a_turn_in_a_new_thread() -> None:
    # Given a top-level mention in a channel
    payload = payloads.slack_app_mention(ts="1515449522.000016")

    # When it is transformed
    event_id, data = published(transform(payload))

    # Then the mention is stripped and the reply goes in the message's thread
    assert event_id == f"slack-{payloads.SLACK_TEAM}-C123ABC456-1515449522.000016"
    assert data.message == "What is the hour of the pearl, ?"
    assert data.session_key == "slack-C123ABC456-1515449522.000016"
    assert data.destination.chat_id == "C123ABC456"
    assert data.destination.message_id == "1515449522.000016"
    assert data.destination.thread_id == "1515449522.000016"
    assert data.sender.id == "U0USER"
    assert data.sender.name == "Ada"


def test_mention_with_a_label_is_stripped() -> None:
    payload = payloads.slack_app_mention()
    payload["event"]["text"] = (
        f"<@{payloads.SLACK_BOT_USER}|harness> summarise &lt;this&gt; &amp; that"
    )

    _, data = published(transform(payload))

    assert data.message == "summarise <this> & that"


def test_bot_user_id_comes_from_authorizations_before_auth_test() -> None:
    def auth_test() -> str:
        raise AssertionError("auth.test should not be called when authorizations name the bot")

    _, data = published(transform(payloads.slack_app_mention(), bot_user_id=auth_test))

    assert f"<@{payloads.SLACK_BOT_USER}>" not in data.message


def test_bot_user_id_falls_back_to_auth_test() -> None:
    payload = payloads.slack_app_mention()
    del payload["authorizations"]

    _, data = published(transform(payload, bot_user_id=lambda: payloads.SLACK_BOT_USER))

    assert f"<@{payloads.SLACK_BOT_USER}>" not in data.message


def test_top_level_dm_messages_share_one_session_and_reply_inline() -> None:
    first_id, first = published(transform(payloads.slack_dm(ts="1355517523.000005")))
    second_id, second = published(transform(payloads.slack_dm(ts="1355517600.000001")))

    assert first.session_key == second.session_key == "slack-D024BE91L"
    assert first_id != second_id
    assert first.destination.thread_id is None
    assert first.message == "Hello hello can you hear me?"


def test_channel_message_is_marked_as_a_group_and_a_dm_is_not() -> None:
    # Given a mention in a channel and a direct message
    _, channel = published(transform(payloads.slack_app_mention()))
    _, dm = published(transform(payloads.slack_dm()))
    # Then only the channel's says several people talk there (the agent is told who wrote)
    assert channel.channel_meta.group is True
    assert dm.channel_meta.group is False


def test_threaded_dm_gets_the_thread_session() -> None:
    _, data = published(
        transform(payloads.slack_dm(ts="1355517600.000001", thread_ts="1355517523.000005"))
    )

    assert data.session_key == "slack-D024BE91L-1355517523.000005"
    assert data.destination.thread_id == "1355517523.000005"


def test_thread_reply_continues_the_mention_session() -> None:
    _, mention = published(transform(payloads.slack_app_mention(ts="1515449522.000016")))
    _, reply = published(transform(payloads.slack_thread_reply(thread_ts="1515449522.000016")))

    assert reply.session_key == mention.session_key
    assert reply.destination.thread_id == "1515449522.000016"
    assert reply.destination.message_id == "1515449600.000200"


def test_message_and_app_mention_pair_give_the_same_event_id() -> None:
    # Given a thread reply that mentions the bot: Slack sends both events, with two event ids
    ts, thread = "1515449700.000300", "1515449522.000016"
    as_message = payloads.slack_thread_reply(ts=ts, thread_ts=thread, event_id="Ev01")
    as_message["event"]["text"] = f"<@{payloads.SLACK_BOT_USER}> and the raven?"
    as_mention = payloads.slack_app_mention(ts=ts, thread_ts=thread, event_id="Ev02")

    # When both are transformed
    message_id, message = published(transform(as_message))
    mention_id, mention = published(transform(as_mention))

    # Then they are one event to the bus
    assert message_id == mention_id
    assert message.session_key == mention.session_key


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (payloads.slack_bot_message(), "message from a bot"),
        (payloads.slack_message_changed(), "edited message"),
        (
            payloads.slack_callback({**payloads.slack_dm()["event"], "subtype": "message_deleted"}),
            "deleted message",
        ),
        (
            payloads.slack_callback({**payloads.slack_dm()["event"], "subtype": "channel_join"}),
            "message subtype channel_join",
        ),
        (
            payloads.slack_callback({**payloads.slack_dm()["event"], "bot_id": "B0OURS"}),
            "message from a bot",
        ),
        (
            payloads.slack_callback({**payloads.slack_thread_reply()["event"], "thread_ts": None}),
            "top-level channel message without a mention",
        ),
        (
            payloads.slack_callback({"type": "reaction_added", "user": "U0USER"}),
            "unsupported event type: reaction_added",
        ),
        ({"type": "app_rate_limited", "team_id": "T1"}, "unsupported payload type"),
    ],
    ids=[
        "bot_message",
        "message_changed",
        "message_deleted",
        "channel_join",
        "bot_id",
        "channel-top-level",
        "reaction",
        "rate-limited",
    ],
)
def test_events_that_start_no_turn_are_ignored_with_a_reason(
    payload: dict[str, Any], reason: str
) -> None:
    inbound = transform(payload)

    assert isinstance(inbound, Ignored), f"expected Ignored, got {inbound!r}"
    assert inbound.reason.startswith(reason), inbound.reason


def test_mention_alone_is_ignored() -> None:
    payload = payloads.slack_app_mention()
    payload["event"]["text"] = f"<@{payloads.SLACK_BOT_USER}>  "

    assert transform(payload) == Ignored("message has no text besides the mention")


def test_allowlist_policy_admits_listed_channels_and_users_only() -> None:
    listed = {"drop_unlisted": True}
    channel_listed = transform(
        payloads.slack_app_mention(), allowed_channels=frozenset({"C123ABC456"}), **listed
    )
    user_listed = transform(payloads.slack_dm(), allowed_channels=frozenset({"U0USER"}), **listed)
    outside = transform(payloads.slack_dm(), allowed_channels=frozenset({"C123ABC456"}), **listed)

    assert isinstance(channel_listed, Publish)
    assert isinstance(user_listed, Publish)
    assert outside == Ignored("channel D024BE91L is not in SLACK_ALLOWED_CHANNELS")


def test_pairing_policy_publishes_unlisted_messages_with_who_wrote() -> None:
    # Given the default policy and an allowlist naming another channel
    dm = transform(payloads.slack_dm(), allowed_channels=frozenset({"C123ABC456"}))
    mention = transform(payloads.slack_app_mention())
    # Then a DM pairs its person, a channel mention pairs the channel, neither is listed
    assert isinstance(dm, Publish) and isinstance(mention, Publish)
    dm_access = dm.event.data["channel_meta"]["access"]
    assert dm_access["pairing_subject"] == "slack:user:U0USER"
    assert dm_access["allowlisted"] is False
    mention_access = mention.event.data["channel_meta"]["access"]
    assert mention_access["pairing_subject"] == "slack:chat:C123ABC456"
    assert "slack:user:U0USER" in mention_access["subjects"]


def test_display_name_is_looked_up_only_for_published_messages() -> None:
    names = Names()

    transform(payloads.slack_bot_message(), display_name=names)
    transform(payloads.slack_app_mention(), display_name=names)

    assert names.calls == ["U0USER"]


def test_file_share_without_text_is_published_with_the_file() -> None:
    # Given a DM carrying only a file
    inbound = transform(payloads.slack_file_share())
    # Then it starts a turn with the file's private download URL as the attachment
    assert isinstance(inbound, Publish), inbound
    data = MessageReceived.model_validate(inbound.event.data)
    (attachment,) = data.attachments
    assert (attachment.kind, attachment.ref) == ("photo", "https://files.slack.com/x")
    assert attachment.name == "receipt.png"


def test_bang_command_in_a_dm_is_published_as_a_command() -> None:
    # Given a DM whose text is `!new` (Slack's client keeps a leading `/` for slash commands)
    payload = payloads.slack_dm()
    payload["event"]["text"] = "!new"
    # Then it is published as the chat command `new`
    _, data = published(transform(payload))
    assert data.command == "new"


def test_slash_command_names_the_dm_session_and_its_command() -> None:
    # Given the app's slash command `/harness usage` typed in a DM
    form = {"channel_id": "D024BE91L", "user_id": "U0USER", "team_id": "T1",
            "command": "/harness", "text": "usage", "trigger_id": "9.9"}  # fmt: skip
    # Then it is the DM's message `/usage`, who typed it asks, once per trigger id
    event_id, data = published(transform_command(form, display_name=Names()))
    assert (data.message, data.command, data.session_key) == ("/usage", "usage", "slack-D024BE91L")
    assert data.channel_meta.asker is not None
    assert data.channel_meta.asker.pairing_subject == "slack:user:U0USER"
    assert event_id == "slack-command-T1-9.9"


def test_slash_command_in_a_channel_publishes_nothing_and_says_to_use_the_thread() -> None:
    # Given the app's slash command `/harness stop` typed in a channel (not a DM)
    form = {"channel_id": "C123ABC456", "user_id": "U0USER", "team_id": "T1",
            "command": "/harness", "text": "stop", "trigger_id": "9.9"}  # fmt: skip
    # When it is transformed
    inbound = transform_command(form, display_name=Names())
    # Then nothing is published (no conversation is guessed): the person alone is told, at
    # once, to type it in the thread, mentioning the bot
    assert isinstance(inbound, Respond), inbound
    assert inbound.body["response_type"] == "ephemeral"
    assert "`@harness !stop`" in inbound.body["text"], inbound.body
