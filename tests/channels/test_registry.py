"""Creating channels by name from the environment."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from channels import registry
from channels.base import Channel
from channels.errors import ChannelNotConfiguredError, UnknownChannelError
from channels.slack.channel import SlackChannel
from channels.telegram.channel import TelegramChannel
from harness.errors import ConfigurationError

CHANNEL_VARIABLES = [
    "TELEGRAM_BOT_TOKEN",
    "TELEGRAM_WEBHOOK_SECRET",
    "TELEGRAM_ALLOWED_CHATS",
    "TELEGRAM_MODE",
    "SLACK_BOT_TOKEN",
    "SLACK_SIGNING_SECRET",
    "SLACK_ALLOWED_CHANNELS",
    "SLACK_API_BASE_URL",
]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No channel settings from the environment or a .env file; no cached channels."""
    monkeypatch.chdir(tmp_path)
    for name in CHANNEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    registry.reset()
    yield
    registry.reset()


def test_builtin_channels_are_registered() -> None:
    assert {"slack", "telegram"} <= set(registry.names())


def test_channel_is_created_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "42:abc")
    monkeypatch.setenv("TELEGRAM_ALLOWED_CHATS", "1111111, -1001234567890")

    channel = registry.create_channel("telegram")

    assert isinstance(channel, TelegramChannel)
    assert channel.settings.telegram_allowed_chats == {"1111111", "-1001234567890"}


def test_channel_without_its_token_is_not_configured() -> None:
    with pytest.raises(ChannelNotConfiguredError, match="SLACK_BOT_TOKEN"):
        registry.create_channel("slack")


def test_invalid_setting_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "42:abc")
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", "has spaces!")

    with pytest.raises(ConfigurationError, match="TELEGRAM_WEBHOOK_SECRET") as caught:
        registry.create_channel("telegram")

    assert not isinstance(caught.value, ChannelNotConfiguredError)


def test_unknown_channel_names_the_known_ones() -> None:
    with pytest.raises(UnknownChannelError, match=r"known channels: (.+, )?slack, telegram"):
        registry.create_channel("discord")


def test_configured_channels_lists_only_those_with_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")

    assert registry.configured_channels() == ["slack"]


def test_get_channel_returns_one_instance_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")

    first = registry.get_channel("slack")

    assert isinstance(first, SlackChannel)
    assert registry.get_channel("slack") is first


def test_new_platform_registers_without_touching_the_others(
    telegram: TelegramChannel,
) -> None:
    # Given a new platform's factory (a stand-in built on an existing channel class)
    registry.register("discord", lambda: telegram)

    # When it is requested by name
    channel = registry.get_channel("discord")

    # Then the registry serves it like a built-in
    assert channel is telegram
    assert isinstance(channel, Channel)
    assert "discord" in registry.names()
