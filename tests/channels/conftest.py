"""Fixtures for the channel tests: the fake platform servers and channels wired to them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from channels.slack.channel import SlackChannel
from channels.slack.settings import SlackSettings
from channels.telegram.channel import TelegramChannel
from channels.telegram.settings import TelegramSettings
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from tests.channels.channel_doubles import channel_bus
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi

TELEGRAM_SECRET = "s3cret-Token_1"
SLACK_SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
PUBLIC_URL = "https://agent.example.com"


@pytest.fixture
def telegram_api() -> Iterator[FakeTelegramApi]:
    """A running fake Telegram Bot API; its `base_url` goes in TELEGRAM_API_BASE_URL."""
    with FakeTelegramApi() as fake:
        yield fake


@pytest.fixture
def slack_api() -> Iterator[FakeSlackApi]:
    """A running fake Slack Web API; its `base_url` goes in SLACK_API_BASE_URL."""
    with FakeSlackApi() as fake:
        yield fake


def telegram_settings(fake: FakeTelegramApi, **overrides: object) -> TelegramSettings:
    """Settings pointing at `fake`; the environment and .env are not read."""
    values: dict[str, object] = {
        "telegram_bot_token": fake.token,
        "telegram_webhook_secret": TELEGRAM_SECRET,
        "telegram_api_base_url": fake.base_url,
        "telegram_allowed_chats": "",
        "telegram_mode": "webhook",
        "public_url": PUBLIC_URL,
        **overrides,
    }
    return TelegramSettings.model_validate(values)


def slack_settings(fake: FakeSlackApi, **overrides: object) -> SlackSettings:
    """Settings pointing at `fake`; the environment and .env are not read."""
    values: dict[str, object] = {
        "slack_bot_token": fake.token,
        "slack_signing_secret": SLACK_SIGNING_SECRET,
        "slack_api_base_url": fake.base_url,
        "slack_allowed_channels": "",
        "public_url": PUBLIC_URL,
        **overrides,
    }
    return SlackSettings.model_validate(values)


@pytest.fixture
def telegram(telegram_api: FakeTelegramApi) -> Iterator[TelegramChannel]:
    """A Telegram channel talking to the fake server."""
    channel = TelegramChannel(telegram_settings(telegram_api))
    yield channel
    channel.api.close()


@pytest.fixture
def slack(slack_api: FakeSlackApi) -> SlackChannel:
    """A Slack channel talking to the fake server."""
    return SlackChannel(slack_settings(slack_api))


@pytest.fixture
def bus(runtime: Runtime, registry: FunctionRegistry) -> Iterator[Runtime]:
    """The runtime with the channel functions registered and installed process-wide (a test
    module whose functions differ defines its own `bus`)."""
    yield from channel_bus(runtime, registry)
