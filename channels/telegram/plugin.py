"""Telegram as a `harness.channels` plug-in (declared in pyproject.toml). Its polling mode
needs no hook: the Telegram channel is a `ResumablePollingChannel`."""

from __future__ import annotations

from channels.plugin import ChannelPlugin
from channels.telegram.channel import create_channel

plugin = ChannelPlugin(create=create_channel)
