"""The Telegram channel against the fake Bot API server."""

from __future__ import annotations

import logging

import pytest

from channels.base import Channel, Ignored, PollingChannel, Publish
from channels.errors import (
    AuthenticationError,
    ChannelNotConfiguredError,
    DestinationError,
    PermanentPlatformError,
    PlatformUnavailable,
    RateLimited,
    WebhookRejected,
)
from channels.telegram.api import TelegramApi
from channels.telegram.channel import TelegramChannel
from channels.telegram.format import to_chunks
from harness.events import Destination
from tests.channels import payloads
from tests.channels.conftest import PUBLIC_URL, TELEGRAM_SECRET, telegram_settings
from tests.fakes.telegram_api import FakeTelegramApi

PRIVATE = Destination(chat_id="1111111", message_id="1365")
TOPIC = Destination(chat_id="-1009876543210", message_id="120", thread_id="42")


def long_reply(paragraphs: int = 5) -> str:
    return "\n\n".join(f"Part {n}: " + "lorem ipsum " * 350 for n in range(paragraphs))


def test_telegram_channel_implements_the_protocols(telegram: TelegramChannel) -> None:
    assert isinstance(telegram, Channel)
    assert isinstance(telegram, PollingChannel)
    assert telegram.name == "telegram"


def test_verify_and_transform_a_webhook(telegram: TelegramChannel) -> None:
    telegram.verify({"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}, b"{}")
    with pytest.raises(WebhookRejected):
        telegram.verify({"X-Telegram-Bot-Api-Secret-Token": "nope"}, b"{}")

    inbound = telegram.transform(payloads.tg_private_text(update_id=9), {})

    assert isinstance(inbound, Publish)
    assert inbound.event.id == f"telegram-{payloads.BOT_ID}-9"


def test_group_mention_is_stripped_using_get_me(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    telegram.warm_up()
    assert telegram.wait_idle()
    first = telegram.transform(payloads.tg_group_mention(update_id=1), {})
    second = telegram.transform(payloads.tg_group_mention(update_id=2), {})

    assert isinstance(first, Publish) and isinstance(second, Publish)
    assert first.event.data["message"] == "what is the hour of the pearl?"
    assert len(telegram_api.calls_to("getMe")) == 1, "the username is cached"


def test_reply_to_a_private_chat_answers_the_users_message(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    ids = telegram.send_reply("Hello **Alice**", PRIVATE, {}, "run-1")

    [call] = telegram_api.calls_to("sendMessage")
    assert call.params["chat_id"] == "1111111"
    assert call.params["text"] == "Hello <b>Alice</b>"
    assert call.params["parse_mode"] == "HTML"
    assert call.params["reply_parameters"] == {
        "message_id": 1365,
        "allow_sending_without_reply": True,
    }
    assert "message_thread_id" not in call.params
    assert ids == [str(telegram_api.messages[0]["message_id"])]


def test_reply_in_a_forum_topic_stays_in_the_topic(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    telegram.send_reply(long_reply(), TOPIC, {}, "run-2")

    calls = telegram_api.calls_to("sendMessage")
    assert len(calls) > 1
    assert all(call.params["message_thread_id"] == 42 for call in calls)
    assert calls[0].params["reply_parameters"]["message_id"] == 120
    assert all("reply_parameters" not in call.params for call in calls[1:])


def test_every_chunk_of_a_long_reply_is_accepted_by_telegram(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    code = "\n".join(f"x{n} = a < b and c > d  # {n}" for n in range(500))
    reply = f"**Result** of `run`:\n\n```python\n{code}\n```\n\n" + long_reply(3)

    ids = telegram.send_reply(reply, PRIVATE, {}, "run-3")

    sent = telegram_api.messages
    assert len(ids) == len(sent) >= 4
    assert all(message["parse_mode"] == "HTML" for message in sent)
    assert not [
        c for c in telegram_api.calls_to("sendMessage") if c.params.get("parse_mode") is None
    ]


def test_chunk_telegram_cannot_parse_is_resent_as_plain_text(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given Telegram refuses the HTML of the next message
    telegram_api.fail_next(
        status=400,
        description="Bad Request: can't parse entities: Unsupported start tag at byte offset 0",
        method="sendMessage",
    )

    # When a formatted reply is sent
    ids = telegram.send_reply("Some **bold** `code<>`", PRIVATE, {}, "run-4")

    # Then the same chunk goes again without parse mode, as plain text
    first, second = telegram_api.calls_to("sendMessage")
    assert first.params["parse_mode"] == "HTML"
    assert "parse_mode" not in second.params
    assert second.params["text"] == "Some bold code<>"
    assert second.params["reply_parameters"]["message_id"] == 1365
    assert len(ids) == 1


def test_chunks_already_sent_are_skipped(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a reply of several chunks, of which 0 and 1 were posted by an earlier attempt
    reply = long_reply(6)
    chunks = to_chunks(reply)
    assert len(chunks) >= 4

    # When it is sent again skipping them
    ids = telegram.send_reply(reply, PRIVATE, {}, "run-5", skip_chunks={0, 1})

    # Then only the rest is posted, in order, and none of them replies to the user's message
    assert [m["text"] for m in telegram_api.messages] == [c.plain for c in chunks[2:]]
    assert len(ids) == len(chunks) - 2
    assert all("reply_parameters" not in c.params for c in telegram_api.calls_to("sendMessage"))


def test_retry_after_a_failure_posts_every_chunk_exactly_once(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given the first attempt fails after chunks 0 and 1, recording what it posted
    reply = long_reply(6)
    recorded: dict[int, str] = {}

    def record(index: int, message_id: str) -> None:
        recorded[index] = message_id
        if index == 1:
            telegram_api.fail_next(status=500, method="sendMessage")

    with pytest.raises(PlatformUnavailable):
        telegram.send_reply(reply, PRIVATE, {}, "run-6", on_chunk_sent=record)
    assert sorted(recorded) == [0, 1]

    # When the step retries with what was recorded
    retried = telegram.send_reply(
        reply, PRIVATE, {}, "run-6", skip_chunks=set(recorded), on_chunk_sent=record
    )

    # Then each chunk has been posted once, in order
    total = len(to_chunks(reply))
    assert sorted(recorded) == list(range(total))
    assert len(retried) == total - 2
    assert [m["text"] for m in telegram_api.messages] == [c.plain for c in to_chunks(reply)]


def test_blank_reply_posts_nothing(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    assert telegram.send_reply("  \n", PRIVATE, {}, "run-7") == []
    assert telegram_api.calls_to("sendMessage") == []


def test_acknowledge_shows_typing_in_the_topic(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    telegram.acknowledge(TOPIC, {})

    [call] = telegram_api.calls_to("sendChatAction")
    assert call.params == {"chat_id": "-1009876543210", "action": "typing", "message_thread_id": 42}


def test_acknowledge_never_raises(telegram: TelegramChannel, telegram_api: FakeTelegramApi) -> None:
    telegram_api.fail_next(status=500)

    telegram.acknowledge(PRIVATE, {})
    telegram.complete(PRIVATE, {})

    assert len(telegram_api.calls_to("sendChatAction")) == 1


def test_setup_sets_the_webhook_with_secret_and_allowed_updates(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    report = telegram.setup()

    assert telegram_api.webhook == {
        "url": f"{PUBLIC_URL}/webhooks/telegram",
        "secret_token": TELEGRAM_SECRET,
        "allowed_updates": ["message", "callback_query"],
    }
    assert "Webhook was set" in report
    assert f"{PUBLIC_URL}/webhooks/telegram" in report


def test_setup_without_public_url_explains_what_is_missing(telegram_api: FakeTelegramApi) -> None:
    channel = TelegramChannel(telegram_settings(telegram_api, public_url=None))

    with pytest.raises(ChannelNotConfiguredError, match="PUBLIC_URL"):
        channel.setup()
    assert telegram_api.calls == []


def test_polling_mode_deletes_the_webhook_and_polls_updates(telegram_api: FakeTelegramApi) -> None:
    # Given a channel in polling mode and two updates waiting
    channel = TelegramChannel(telegram_settings(telegram_api, telegram_mode="polling"))
    telegram_api.push_update(payloads.tg_private_text(update_id=500))
    telegram_api.push_update(payloads.tg_edited(update_id=501))

    # When it is set up and polls twice
    report = channel.setup()
    first = channel.poll(timeout=0)
    second = channel.poll(timeout=0)

    # Then it gets each update once and confirms them with the next offset
    assert "polling" in report and telegram_api.webhook is None
    assert channel.polling
    assert isinstance(first[0], Publish) and isinstance(first[1], Ignored)
    assert second == []
    assert [c.params.get("offset") for c in telegram_api.calls_to("getUpdates")] == [None, 502]


def test_missing_token_means_not_configured(telegram_api: FakeTelegramApi) -> None:
    with pytest.raises(ChannelNotConfiguredError):
        TelegramChannel(telegram_settings(telegram_api, telegram_bot_token=None))


def test_short_rate_limit_is_retried_once(telegram_api: FakeTelegramApi) -> None:
    api = TelegramApi(telegram_api.token, telegram_api.base_url)
    telegram_api.fail_next(status=429, retry_after=0, method="sendMessage")

    message = api.send_message("1111111", "hi")

    assert message["text"] == "hi"
    assert len(telegram_api.calls_to("sendMessage")) == 2


def test_long_rate_limit_raises_with_retry_after(telegram_api: FakeTelegramApi) -> None:
    api = TelegramApi(telegram_api.token, telegram_api.base_url, max_rate_limit_wait=5)
    telegram_api.fail_next(status=429, retry_after=30)

    with pytest.raises(RateLimited) as caught:
        api.send_message("1111111", "hi")

    assert caught.value.retry_after == 30
    assert len(telegram_api.calls_to("sendMessage")) == 1


@pytest.mark.parametrize(
    ("status", "description", "error"),
    [
        (403, "Forbidden: bot was blocked by the user", DestinationError),
        (400, "Bad Request: chat not found", DestinationError),
        (502, "Bad Gateway", PlatformUnavailable),
    ],
)
def test_api_errors_map_to_our_exceptions(
    telegram_api: FakeTelegramApi, status: int, description: str, error: type[Exception]
) -> None:
    api = TelegramApi(telegram_api.token, telegram_api.base_url)
    telegram_api.fail_next(status=status, description=description)

    with pytest.raises(error, match=description):
        api.send_message("1111111", "hi")


def test_getupdates_while_a_webhook_is_set_is_a_conflict(telegram_api: FakeTelegramApi) -> None:
    api = TelegramApi(telegram_api.token, telegram_api.base_url)
    api.set_webhook(
        "https://agent.example.com/webhooks/telegram", secret_token="s", allowed_updates=[]
    )

    with pytest.raises(PermanentPlatformError, match="Conflict"):
        api.get_updates()


def test_token_never_appears_in_errors_or_logs(
    telegram_api: FakeTelegramApi, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a wrong token, and an unreachable server
    wrong = "999:SECRET-wrong-token"
    unreachable = "424242:SECRET-unreachable"
    caplog.set_level(logging.DEBUG)

    # When calls fail
    with pytest.raises(AuthenticationError) as rejected:
        TelegramApi(wrong, telegram_api.base_url).get_me()
    with pytest.raises(PlatformUnavailable) as down:
        TelegramApi(unreachable, "http://127.0.0.1:9", timeout=2).get_me()

    # Then neither token shows in the errors or in any log record (httpx2 logs each request URL)
    for secret in ("SECRET-wrong-token", "SECRET-unreachable"):
        assert secret not in str(rejected.value) and secret not in str(down.value)
        assert secret not in caplog.text
    assert "/bot<token>/getMe" in caplog.text, "httpx2's request log is kept, redacted"


def test_reactions_must_come_from_telegrams_list(telegram_api: FakeTelegramApi) -> None:
    api = TelegramApi(telegram_api.token, telegram_api.base_url)

    api.set_message_reaction("1111111", "1365", "👀")
    with pytest.raises(PermanentPlatformError, match="REACTION_INVALID"):
        api.set_message_reaction("1111111", "1365", "✅")

    assert [c.params["reaction"] for c in telegram_api.calls_to("setMessageReaction")] == [
        [{"type": "emoji", "emoji": "👀"}],
        [{"type": "emoji", "emoji": "✅"}],
    ]
