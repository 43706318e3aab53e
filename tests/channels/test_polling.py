"""Telegram polling (`TELEGRAM_MODE=polling`): updates are published like webhooks, the offset
lives in Redis and advances only after publishing, failures back off."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import fakeredis
import pytest

from channels import registry as channel_registry
from channels.base import PollBatch
from channels.errors import AuthenticationError, PlatformUnavailable, RateLimited
from channels.listeners import listener_channels
from channels.polling import (
    MAX_BACKOFF_S,
    offset_key,
    poll_once,
    retry_delay,
    run_polling,
)
from channels.slack.channel import SlackChannel
from channels.telegram.channel import TelegramChannel
from harness.errors import BusUnavailableError, ConfigurationError
from harness.records.stores import memory_records
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from tests.channels import payloads
from tests.channels.conftest import slack_settings, telegram_settings
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi
from tests.waiting import wait_until


@pytest.fixture
def poller(telegram_api: FakeTelegramApi) -> Iterator[TelegramChannel]:
    """The Telegram channel in polling mode, on the fake Bot API."""
    channel = TelegramChannel(telegram_settings(telegram_api, telegram_mode="polling"))
    yield channel
    channel.api.close()


def stream_length(runtime: Runtime) -> int:
    return int(runtime.redis.xlen(runtime.keys.events))


def test_poll_once_publishes_messages_and_saves_the_offset(
    runtime: Runtime, poller: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a message and an edit waiting on Telegram
    telegram_api.push_update(payloads.tg_private_text(update_id=500))
    telegram_api.push_update(payloads.tg_edited(update_id=501))
    # When the poller polls once
    fetched = poll_once(poller, runtime, timeout=0)
    # Then the message is published, the edit ignored, and the offset moved past both
    assert fetched == 2
    assert stream_length(runtime) == 1
    assert runtime.redis.get(offset_key(runtime, "telegram")) == "502"
    # And the next poll confirms them to Telegram and gets nothing new
    assert poll_once(poller, runtime, timeout=0) == 0
    assert telegram_api.calls_to("getUpdates")[-1].params["offset"] == 502


def test_poll_unreadable_update_does_not_block_the_ones_after_it(
    runtime: Runtime, poller: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given an update the transform cannot read (its chat is a list), then a good one
    telegram_api.push_update({"update_id": 550, "message": {"chat": [1], "from": {"id": 1}}})
    telegram_api.push_update(payloads.tg_private_text(update_id=551))
    # When the poller polls
    fetched = poll_once(poller, runtime, timeout=0)
    # Then the good one is published and the offset moves past both
    assert fetched == 2
    assert stream_length(runtime) == 1
    assert runtime.redis.get(offset_key(runtime, "telegram")) == "552"


def test_poll_resumes_from_the_offset_in_redis(
    runtime: Runtime, poller: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a previous poller saved an offset
    runtime.redis.set(offset_key(runtime, "telegram"), "900")
    # When a new one polls
    poll_once(poller, runtime, timeout=0)
    # Then it asks Telegram from there
    assert telegram_api.calls_to("getUpdates")[0].params["offset"] == 900


def test_poll_crash_before_saving_the_offset_loses_nothing_and_publishes_once(
    runtime: Runtime, poller: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a batch was published but the poller died before saving its offset
    telegram_api.push_update(payloads.tg_private_text(update_id=600))
    poll_once(poller, runtime, timeout=0)
    runtime.redis.delete(offset_key(runtime, "telegram"))
    # When a restarted poller polls
    fetched = poll_once(poller, runtime, timeout=0)
    # Then Telegram delivers the unconfirmed update again, and the bus keeps one copy
    assert fetched == 1
    assert stream_length(runtime) == 1


def test_poll_once_keeps_its_cursor_in_the_records_it_is_given(
    unreachable_runtime: Runtime, poller: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given an update that publishes nothing (an edit), and the in-memory records, beside a
    # runtime whose Redis is unreachable
    telegram_api.push_update(payloads.tg_edited(update_id=501))
    records = memory_records()
    # When the poller polls on those records
    fetched = poll_once(poller, unreachable_runtime, timeout=0, records=records)
    # Then the cursor moved past the update there, and the next poll asks from it
    assert fetched == 1
    assert records.cursors.get("telegram") == "502"
    poll_once(poller, unreachable_runtime, timeout=0, records=records)
    assert telegram_api.calls_to("getUpdates")[-1].params["offset"] == 502


def test_poll_with_redis_down_does_not_advance_the_offset(
    registry: FunctionRegistry, poller: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given Redis goes away between fetching a batch and publishing it
    server = fakeredis.FakeServer()
    runtime = Runtime(
        redis=fakeredis.FakeRedis(server=server, decode_responses=True),
        kicker=RecordingKicker(),
        registry=registry,
    )

    class DropsRedisAfterFetching(TelegramChannel):
        def poll_from(self, cursor: str | None, timeout: float = 30.0) -> PollBatch:
            batch = super().poll_from(cursor, timeout)
            server.connected = False
            return batch

    flaky = DropsRedisAfterFetching(poller.settings, poller.api)
    telegram_api.push_update(payloads.tg_private_text(update_id=700))
    # When the poll fails to publish
    with pytest.raises(BusUnavailableError):
        poll_once(flaky, runtime, timeout=0)
    # Then, Redis back, no offset was saved and the next poll publishes the update
    server.connected = True
    assert runtime.redis.get(offset_key(runtime, "telegram")) is None
    assert poll_once(poller, runtime, timeout=0) == 1
    assert stream_length(runtime) == 1


def test_run_polling_removes_the_webhook_and_publishes_until_stopped(
    runtime: Runtime, poller: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a webhook was set before (getUpdates answers 409 while it is)
    poller.api.set_webhook(
        "https://old.example.com/webhooks/telegram", secret_token="s", allowed_updates=["message"]
    )
    telegram_api.push_update(payloads.tg_private_text(update_id=800))
    stop = threading.Event()
    thread = threading.Thread(
        target=run_polling, args=(runtime, stop, poller), kwargs={"timeout": 1}
    )
    # When the poller runs
    thread.start()
    try:
        wait_until(lambda: stream_length(runtime) == 1, "the update to be published", timeout=20)
        telegram_api.push_update(payloads.tg_private_text(update_id=801))
        wait_until(
            lambda: stream_length(runtime) == 2, "the second update to be published", timeout=20
        )
    finally:
        stop.set()
        thread.join(timeout=15)
    # Then the webhook was removed and the command menu set first, and the poller stopped
    # when asked
    assert [c.method for c in telegram_api.calls][1:4] == [
        "deleteWebhook",
        "setMyCommands",
        "getUpdates",
    ]
    assert telegram_api.webhook is None
    assert not thread.is_alive()


def test_run_polling_backs_off_after_a_conflict_and_carries_on(
    runtime: Runtime, poller: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given another getUpdates holds the updates once (Telegram answers 409)
    telegram_api.fail_next(
        status=409, description="Conflict: terminated by other getUpdates", method="getUpdates"
    )
    telegram_api.push_update(payloads.tg_private_text(update_id=900))
    stop = threading.Event()
    delays: list[float] = []

    def wait(seconds: float) -> bool:
        delays.append(seconds)
        return stop.is_set()

    # When the poller runs until the update is published
    def published_then_stop() -> None:
        try:
            wait_until(
                lambda: stream_length(runtime) == 1, "the update to be published", timeout=20
            )
        finally:
            stop.set()

    watcher = threading.Thread(target=published_then_stop)
    watcher.start()
    run_polling(runtime, stop, poller, timeout=1, wait=wait)
    watcher.join(timeout=15)
    # Then it waited once, a second, set itself up again (no webhook, the command menu), and
    # went on
    assert delays == [1.0]
    assert stream_length(runtime) == 1
    assert [c.method for c in telegram_api.calls][:6] == [
        "deleteWebhook",
        "setMyCommands",
        "getUpdates",
        "deleteWebhook",
        "setMyCommands",
        "getUpdates",
    ]


def test_run_polling_stops_on_a_rejected_token(
    runtime: Runtime, telegram_api: FakeTelegramApi
) -> None:
    wrong = TelegramChannel(
        telegram_settings(telegram_api, telegram_mode="polling", telegram_bot_token="1:wrong")
    )
    with pytest.raises(AuthenticationError):
        run_polling(runtime, threading.Event(), wrong, timeout=0)
    wrong.api.close()


def test_run_polling_refuses_a_channel_in_webhook_mode(
    runtime: Runtime, telegram: TelegramChannel
) -> None:
    with pytest.raises(ConfigurationError, match="not configured to poll"):
        run_polling(runtime, threading.Event(), telegram)


@pytest.mark.parametrize(
    ("error", "failures", "expected"),
    [
        (RateLimited("telegram", "getUpdates", "Too Many Requests", 7.0), 1, 7.0),
        (PlatformUnavailable("telegram", "getUpdates", "timed out"), 1, 1.0),
        (PlatformUnavailable("telegram", "getUpdates", "timed out"), 3, 4.0),
        (PlatformUnavailable("telegram", "getUpdates", "timed out"), 30, MAX_BACKOFF_S),
    ],
    ids=["rate-limit", "first", "third", "capped"],
)
def test_retry_delay_honours_rate_limits_and_backs_off(
    error: Exception, failures: int, expected: float
) -> None:
    assert retry_delay(error, failures) == expected


def test_listener_channels_are_the_polling_and_socket_mode_ones(
    telegram_api: FakeTelegramApi, slack_api: FakeSlackApi, tmp_path: Path
) -> None:
    polling = TelegramChannel(telegram_settings(telegram_api, telegram_mode="polling"))
    socket = SlackChannel(slack_settings(slack_api, slack_app_token="xapp-1-A1-1-abc"))
    webhook_only = SlackChannel(slack_settings(slack_api))
    channel_registry.reset()
    try:
        channel_registry.register("telegram", lambda: polling)
        channel_registry.register("slack", lambda: webhook_only)
        assert listener_channels() == ["telegram"]
        channel_registry.register("slack", lambda: socket)
        assert listener_channels() == ["slack", "telegram"]
    finally:
        channel_registry.reset()
        polling.api.close()
