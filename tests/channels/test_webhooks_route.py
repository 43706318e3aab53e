"""`POST /webhooks/{channel}` through FastAPI's TestClient, on a fakeredis runtime: verify,
transform, publish, and every way a request can be refused."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from fastapi.testclient import TestClient

from channels import registry as channel_registry
from channels.base import Channel
from channels.errors import ChannelNotConfiguredError
from channels.slack.channel import SlackChannel
from channels.telegram.channel import TelegramChannel
from harness.events import MESSAGE_RECEIVED
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.settings import Settings
from harness.web import create_app
from harness.web.body import MAX_BODY_BYTES
from harness.web.webhooks import router
from tests.channels import payloads
from tests.channels.channel_doubles import use_channels
from tests.channels.conftest import (
    SLACK_SIGNING_SECRET,
    TELEGRAM_SECRET,
    slack_settings,
    telegram_settings,
)
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi

TELEGRAM_EVENT = f"telegram-{payloads.BOT_ID}-"


def slack_headers(body: bytes, *, timestamp: int | None = None, secret: str = "") -> dict[str, str]:
    """Headers signed like Slack's: v0=HMAC-SHA256(secret, "v0:<ts>:<body>")."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    base = f"v0:{ts}:".encode() + body
    key = (secret or SLACK_SIGNING_SECRET).encode()
    signature = "v0=" + hmac.new(key, base, hashlib.sha256).hexdigest()
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": signature,
        "Content-Type": "application/json",
    }


TELEGRAM_HEADERS = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}


@pytest.fixture
def client(
    runtime: Runtime, telegram: TelegramChannel, slack: SlackChannel, tmp_path: Path
) -> Iterator[TestClient]:
    use_channels(telegram=telegram, slack=slack)
    settings = Settings(_env_file=None, agent_workspace=tmp_path)  # type: ignore[call-arg]
    with TestClient(create_app(lambda: runtime, settings, routers=[router])) as test_client:
        yield test_client
    channel_registry.reset()


def post_telegram(client: TestClient, update: dict[str, Any], **headers: str) -> Any:
    return client.post("/webhooks/telegram", json=update, headers={**TELEGRAM_HEADERS, **headers})


def post_slack(client: TestClient, payload: dict[str, Any], **headers: str) -> Any:
    body = json.dumps(payload).encode()
    return client.post("/webhooks/slack", content=body, headers={**slack_headers(body), **headers})


def published(runtime: Runtime) -> list[dict[str, Any]]:
    """Every event on the stream, oldest first."""
    return [
        json.loads(fields["event"]) for _id, fields in runtime.redis.xrange(runtime.keys.events)
    ]


# -- outcomes of the documented payloads ---------------------------------------------------


@pytest.mark.parametrize(
    ("update", "session_key"),
    [
        (payloads.tg_private_text(), "telegram-1111111"),
        (payloads.tg_group_mention(), "telegram--1001234567890"),
        (payloads.tg_forum_topic(), "telegram--1009876543210-42"),
        (payloads.tg_photo(), "telegram-1111111"),
    ],
    ids=["private", "group-mention", "forum-topic", "photo-caption"],
)
def test_webhook_telegram_message_is_published(
    client: TestClient, runtime: Runtime, update: dict[str, Any], session_key: str
) -> None:
    # When Telegram delivers a message that starts a turn
    response = post_telegram(client, update)
    # Then it is answered 200 with the event id, and exactly that event is on the bus
    assert response.status_code == 200, response.text
    event_id = f"{TELEGRAM_EVENT}{update['update_id']}"
    assert response.json() == {"ok": True, "event_id": event_id, "duplicate": False}
    (event,) = published(runtime)
    assert (event["name"], event["id"]) == (MESSAGE_RECEIVED, event_id)
    assert event["data"]["session_key"] == session_key


@pytest.mark.parametrize(
    ("update", "reason"),
    [
        (payloads.tg_edited(), "unsupported update type: edited_message"),
        (payloads.tg_callback_query(), "callback query that is not an approval answer"),
        (payloads.tg_from_bot(), "message from a bot"),
        (payloads.tg_new_members(), "service message: new_chat_members"),
    ],
    ids=["edited", "callback-query", "from-bot", "service"],
)
def test_webhook_telegram_update_without_a_turn_is_ignored(
    client: TestClient, runtime: Runtime, update: dict[str, Any], reason: str
) -> None:
    response = post_telegram(client, update)
    assert response.status_code == 200, response.text
    assert response.json() == {"ok": True, "ignored": reason}
    assert published(runtime) == [], "an ignored update must publish nothing"


@pytest.mark.parametrize(
    ("payload", "session_key", "thread_id"),
    [
        (payloads.slack_app_mention(), "slack-C123ABC456-1515449522.000016", "1515449522.000016"),
        (payloads.slack_dm(), "slack-D024BE91L", None),
        (
            payloads.slack_thread_reply(),
            "slack-C123ABC456-1515449522.000016",
            "1515449522.000016",
        ),
    ],
    ids=["app-mention", "dm", "thread-reply"],
)
def test_webhook_slack_message_is_published(
    client: TestClient,
    runtime: Runtime,
    payload: dict[str, Any],
    session_key: str,
    thread_id: str | None,
) -> None:
    response = post_slack(client, payload)
    assert response.status_code == 200, response.text
    assert response.json()["duplicate"] is False
    (event,) = published(runtime)
    assert event["data"]["session_key"] == session_key
    assert event["data"]["destination"]["thread_id"] == thread_id


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (payloads.slack_bot_message(), "message from a bot"),
        (payloads.slack_message_changed(), "edited message"),
    ],
    ids=["bot-message", "message-changed"],
)
def test_webhook_slack_event_without_a_turn_is_ignored(
    client: TestClient, runtime: Runtime, payload: dict[str, Any], reason: str
) -> None:
    response = post_slack(client, payload)
    assert response.status_code == 200, response.text
    assert response.json() == {"ok": True, "ignored": reason}
    assert published(runtime) == []


def test_webhook_slack_url_verification_answers_the_challenge(
    client: TestClient, runtime: Runtime
) -> None:
    payload = payloads.slack_url_verification()
    response = post_slack(client, payload)
    assert response.status_code == 200, response.text
    assert response.json() == {"challenge": payload["challenge"]}
    assert published(runtime) == []


# -- verification ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{"X-Telegram-Bot-Api-Secret-Token": "wrong-secret"}, {}],
    ids=["wrong-secret", "no-secret"],
)
def test_webhook_telegram_without_the_secret_is_401_and_publishes_nothing(
    client: TestClient, runtime: Runtime, headers: dict[str, str]
) -> None:
    response = client.post("/webhooks/telegram", json=payloads.tg_private_text(), headers=headers)
    assert response.status_code == 401, response.text
    assert runtime.redis.xlen(runtime.keys.events) == 0


@pytest.mark.parametrize(
    "signing",
    [
        {"secret": "not-the-signing-secret"},
        {"timestamp": int(time.time()) - 600},
    ],
    ids=["bad-signature", "stale-timestamp"],
)
def test_webhook_slack_with_a_bad_or_stale_signature_is_401_and_publishes_nothing(
    client: TestClient, runtime: Runtime, signing: dict[str, Any]
) -> None:
    body = json.dumps(payloads.slack_app_mention()).encode()
    response = client.post("/webhooks/slack", content=body, headers=slack_headers(body, **signing))
    assert response.status_code == 401, response.text
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_webhook_slack_body_changed_after_signing_is_401(
    client: TestClient, runtime: Runtime
) -> None:
    body = json.dumps(payloads.slack_app_mention()).encode()
    headers = slack_headers(body)
    tampered = body.replace(b"pearl", b"PEARL")
    response = client.post("/webhooks/slack", content=tampered, headers=headers)
    assert response.status_code == 401
    assert runtime.redis.xlen(runtime.keys.events) == 0


# -- duplicates ----------------------------------------------------------------------------


def test_webhook_telegram_redelivery_publishes_once(client: TestClient, runtime: Runtime) -> None:
    first = post_telegram(client, payloads.tg_private_text())
    second = post_telegram(client, payloads.tg_private_text())
    assert (first.status_code, second.status_code) == (200, 200)
    assert second.json()["duplicate"] is True
    assert runtime.redis.xlen(runtime.keys.events) == 1


def test_webhook_slack_retry_and_mention_pair_publish_once(
    client: TestClient, runtime: Runtime
) -> None:
    # Given a mention in a thread, which Slack sends as an app_mention and as a message
    ts, thread = "1515449700.000300", "1515449522.000016"
    mention = payloads.slack_app_mention(ts=ts, thread_ts=thread, event_id="Ev1")
    message = payloads.slack_thread_reply(
        ts=ts, thread_ts=thread, text=mention["event"]["text"], event_id="Ev2"
    )
    # When both arrive, and Slack retries the first
    responses = [
        post_slack(client, mention),
        post_slack(client, message),
        post_slack(client, mention, **{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "x"}),
    ]
    # Then all are answered 200 and one event is published
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert [r.json()["duplicate"] for r in responses] == [False, True, True]
    assert runtime.redis.xlen(runtime.keys.events) == 1


# -- allowlists ----------------------------------------------------------------------------


def test_webhook_telegram_chat_outside_the_allowlist_is_ignored(
    client: TestClient, runtime: Runtime, telegram_api: FakeTelegramApi
) -> None:
    restricted = TelegramChannel(
        telegram_settings(telegram_api, telegram_allowed_chats="42", dm_policy="allowlist")
    )
    channel_registry.register("telegram", lambda: restricted)
    response = post_telegram(client, payloads.tg_private_text())
    assert response.json() == {
        "ok": True,
        "ignored": "chat 1111111 is not in TELEGRAM_ALLOWED_CHATS",
    }
    assert runtime.redis.xlen(runtime.keys.events) == 0
    restricted.api.close()


def test_webhook_telegram_chat_in_the_allowlist_is_published(
    client: TestClient, runtime: Runtime, telegram_api: FakeTelegramApi
) -> None:
    allowed = TelegramChannel(telegram_settings(telegram_api, telegram_allowed_chats="1111111"))
    channel_registry.register("telegram", lambda: allowed)
    assert post_telegram(client, payloads.tg_private_text()).json()["duplicate"] is False
    assert runtime.redis.xlen(runtime.keys.events) == 1
    allowed.api.close()


def test_webhook_slack_channel_outside_the_allowlist_is_ignored(
    client: TestClient, runtime: Runtime, slack_api: FakeSlackApi
) -> None:
    restricted = SlackChannel(
        slack_settings(slack_api, slack_allowed_channels="C0OTHER", dm_policy="allowlist")
    )
    channel_registry.register("slack", lambda: restricted)
    response = post_slack(client, payloads.slack_app_mention())
    assert response.json()["ignored"] == "channel C123ABC456 is not in SLACK_ALLOWED_CHANNELS"
    assert runtime.redis.xlen(runtime.keys.events) == 0


# -- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize("body", [b"{not json", b"", b"\xff\xfe", b"[1, 2]", b'"text"'], ids=str)
def test_webhook_malformed_or_non_object_json_is_400(
    client: TestClient, runtime: Runtime, body: bytes
) -> None:
    response = client.post("/webhooks/telegram", content=body, headers=TELEGRAM_HEADERS)
    assert response.status_code == 400, response.text
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_webhook_slack_signed_malformed_json_is_400(client: TestClient) -> None:
    body = b'{"type": "event_callback",'
    response = client.post("/webhooks/slack", content=body, headers=slack_headers(body))
    assert response.status_code == 400


def test_webhook_body_over_one_megabyte_is_413(client: TestClient, runtime: Runtime) -> None:
    update = payloads.tg_private_text(text="x" * MAX_BODY_BYTES)
    response = post_telegram(client, update)
    assert response.status_code == 413, response.text
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_webhook_unknown_channel_is_404(client: TestClient) -> None:
    response = client.post("/webhooks/discord", json={"hello": "world"})
    assert response.status_code == 404
    assert "discord" in response.json()["detail"]


def test_webhook_channel_that_is_not_configured_is_404(client: TestClient) -> None:
    def not_configured() -> Channel:
        raise ChannelNotConfiguredError("TELEGRAM_BOT_TOKEN is not set")

    channel_registry.register("telegram", not_configured)
    response = post_telegram(client, payloads.tg_private_text())
    assert response.status_code == 404
    assert response.json() == {"detail": "channel 'telegram' is not configured"}


def test_webhook_payload_that_breaks_the_transform_is_200_and_ignored(
    client: TestClient, runtime: Runtime
) -> None:
    # Given a verified update whose chat is a list, which the Telegram transform cannot read
    update = {"update_id": 7, "message": {"chat": [1], "from": {"id": 1}, "text": "hi"}}
    # When it is delivered
    response = post_telegram(client, update)
    # Then the platform is told not to redeliver it, and nothing is published
    assert response.status_code == 200
    assert response.json() == {"ok": True, "ignored": "the payload could not be processed"}
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_webhook_with_redis_down_is_503(
    telegram: TelegramChannel, registry: FunctionRegistry, tmp_path: Path
) -> None:
    # Given the bus's Redis is unreachable
    server = fakeredis.FakeServer()
    server.connected = False
    down = Runtime(
        redis=fakeredis.FakeRedis(server=server, decode_responses=True),
        kicker=RecordingKicker(),
        registry=registry,
    )
    use_channels(telegram=telegram)
    settings = Settings(_env_file=None, agent_workspace=tmp_path)  # type: ignore[call-arg]
    app = create_app(lambda: down, settings, routers=[router])
    # When a valid message arrives
    with TestClient(app) as test_client:
        response = post_telegram(test_client, payloads.tg_private_text())
    channel_registry.reset()
    # Then the platform is asked to retry later
    assert response.status_code == 503, response.text
    assert response.json() == {"detail": "event bus unavailable; retry later"}
    assert response.headers["Retry-After"] == "5", "a 503 must say when to retry"


def test_webhook_path_makes_no_platform_call_for_a_plain_message(
    client: TestClient, telegram_api: FakeTelegramApi
) -> None:
    # A text without a mention needs nothing from Telegram: the route only verifies,
    # transforms and publishes.
    post_telegram(client, payloads.tg_private_text())
    assert telegram_api.calls == [], f"expected no Bot API call, got {telegram_api.calls}"


# -- malformed input: a 4xx (or a 200 that publishes nothing) and one log line ---------------


def test_webhook_slack_signature_with_non_ascii_text_is_401(
    client: TestClient, runtime: Runtime
) -> None:
    # Given a Slack request whose signature header is not ASCII
    body = json.dumps(payloads.slack_message_changed()).encode()
    headers: dict[str, Any] = {
        **slack_headers(body),
        "X-Slack-Signature": "v0=\xe9".encode("latin-1"),
    }
    # When it is delivered
    response = client.post("/webhooks/slack", content=body, headers=headers)
    # Then it is refused like any bad signature, and nothing is published
    assert response.status_code == 401, response.text
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_webhook_json_nested_too_deep_is_400_before_parsing(
    client: TestClient, runtime: Runtime
) -> None:
    # Given a verified update with 300 levels of nesting (more than the bus can serialise)
    update = payloads.tg_private_text()
    nested = "[" * 300 + "]" * 300
    body = json.dumps(update).encode()[:-1] + b', "extra": ' + nested.encode() + b"}"
    # When it is delivered
    response = client.post("/webhooks/telegram", content=body, headers=TELEGRAM_HEADERS)
    # Then it is refused, and nothing is published
    assert response.status_code == 400, response.text
    assert "nested" in response.json()["detail"]
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_webhook_lone_surrogate_is_replaced_and_the_message_published(
    client: TestClient, runtime: Runtime
) -> None:
    # Given a message whose text holds a lone UTF-16 surrogate, which JSON allows
    body = json.dumps(payloads.tg_private_text(text="x\ud800y")).encode()
    # When it is delivered
    response = client.post("/webhooks/telegram", content=body, headers=TELEGRAM_HEADERS)
    # Then it is published with U+FFFD in its place, so the turn can encode it
    assert response.status_code == 200, response.text
    (event,) = published(runtime)
    assert event["data"]["message"].endswith("x\ufffdy"), event["data"]["message"]


def test_webhook_badly_typed_payload_logs_one_line_and_no_error(
    client: TestClient, runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a verified update whose fields have the wrong types
    update = {"update_id": 8, "message": {"chat": [1], "from": {"id": 1}, "text": 5}}
    # When it is delivered
    with caplog.at_level("INFO", logger="harness.web.webhooks"):
        response = post_telegram(client, update)
    # Then it is answered without a redelivery, with one warning line and no traceback
    assert response.status_code in (200, 400, 422), response.text
    assert runtime.redis.xlen(runtime.keys.events) == 0
    records = [r for r in caplog.records if r.name == "harness.web.webhooks"]
    assert [r.levelname for r in records] == ["WARNING"], [r.getMessage() for r in records]
    assert records[0].exc_info is None
