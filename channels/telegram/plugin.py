"""Telegram as a `harness.channels` plug-in (declared in pyproject.toml). Its polling mode
needs no hook: the Telegram channel is a `ResumablePollingChannel`. Without a bot token
`harness setup telegram` just says it is missing.

Loading the plug-in does not import the channel: `harness doctor --offline` loads every
plug-in for its checks and builds no channel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from channels.plugin import ChannelPlugin
from channels.telegram.checks import telegram_checks

if TYPE_CHECKING:
    from channels.telegram.channel import TelegramChannel


def create_channel() -> TelegramChannel:
    """`channels.telegram.channel.create_channel`: the Telegram channel from the environment.
    Raises `ChannelNotConfiguredError` without TELEGRAM_BOT_TOKEN."""
    from channels.telegram import channel  # the channel's modules: only to build one

    return channel.create_channel()


plugin = ChannelPlugin(create=create_channel, checks=telegram_checks)
