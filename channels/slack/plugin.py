"""Slack as a `harness.channels` plug-in (declared in pyproject.toml): webhooks, or Socket
Mode when SLACK_APP_TOKEN is set. Before the app exists, `harness setup slack` prints the
manifest to create it from.

Loading the plug-in imports neither the Slack SDK nor the channel (~0.1 s): `harness doctor
--offline` loads every plug-in for its checks and builds no channel. Each hook imports what
it calls when it is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from channels.base import Channel
from channels.plugin import ChannelPlugin, ListenerFactory
from channels.slack.checks import slack_checks

if TYPE_CHECKING:
    from channels.slack.channel import SlackChannel


def create_channel() -> SlackChannel:
    """`channels.slack.channel.create_channel`: the Slack channel from the environment.
    Raises `ChannelNotConfiguredError` without SLACK_BOT_TOKEN."""
    from channels.slack import channel  # the SDK, with the channel: only to build one

    return channel.create_channel()


def socket_mode_listener(channel: Channel) -> ListenerFactory | None:
    """A Socket Mode listener for the Slack channel with SLACK_APP_TOKEN, else None."""
    from channels.slack.socket_mode import SocketModeListener, socket_mode_enabled

    if not socket_mode_enabled(channel):
        return None
    return lambda runtime: SocketModeListener(runtime, channel)


def unconfigured_report() -> str:
    """`channels.slack.setup.unconfigured_report`: the manifest to create the app from."""
    from channels.slack import setup  # the SDK and YAML: only for `harness setup slack`

    return setup.unconfigured_report()


plugin = ChannelPlugin(
    create=create_channel,
    listener=socket_mode_listener,
    checks=slack_checks,
    unconfigured_report=unconfigured_report,
)
