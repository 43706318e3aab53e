"""Telegram as a `harness.channels` plug-in (declared in pyproject.toml). Its polling mode
needs no hook: the Telegram channel is a `ResumablePollingChannel`. Without a bot token
`harness setup telegram` just says it is missing."""

from __future__ import annotations

from channels.plugin import ChannelPlugin
from channels.telegram.channel import create_channel
from channels.telegram.checks import telegram_checks

plugin = ChannelPlugin(create=create_channel, checks=telegram_checks)
