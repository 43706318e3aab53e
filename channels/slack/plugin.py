"""Slack as a `harness.channels` plug-in (declared in pyproject.toml): webhooks, or Socket
Mode when SLACK_APP_TOKEN is set. Before the app exists, `harness setup slack` prints the
manifest to create it from."""

from __future__ import annotations

from channels.base import Channel
from channels.plugin import ChannelPlugin, ListenerFactory
from channels.slack.channel import create_channel
from channels.slack.checks import slack_checks
from channels.slack.setup import unconfigured_report
from channels.slack.socket_mode import SocketModeListener, socket_mode_enabled
from harness.runtime import Runtime


def socket_mode_listener(channel: Channel) -> ListenerFactory | None:
    """A Socket Mode listener for the Slack channel with SLACK_APP_TOKEN, else None."""
    if not socket_mode_enabled(channel):
        return None

    def listener(runtime: Runtime) -> SocketModeListener:
        return SocketModeListener(runtime, channel)

    return listener


plugin = ChannelPlugin(
    create=create_channel,
    listener=socket_mode_listener,
    checks=slack_checks,
    unconfigured_report=unconfigured_report,
)
