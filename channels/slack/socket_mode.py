"""Slack's Socket Mode: events over a WebSocket we open, for a machine with no public URL.

slack_sdk's built-in Socket Mode client connects with SLACK_APP_TOKEN (an `xapp-` app-level
token with `connections:write`) and reconnects by itself. Each `events_api` envelope is
transformed and published exactly as the webhook would (`channels.listener.publish_inbound`),
then acknowledged. Acknowledging after publishing means a message is never lost: when Redis
is down the envelope stays unacknowledged and Slack delivers it again, and the event id makes
that redelivery harmless. `interactive` envelopes (approval buttons pressed) are handled like
the HTTP `/webhooks/slack/interactions` route, the socket standing in for the signature, and
`slash_commands` envelopes like `/webhooks/slack/commands`. Other envelope types are
acknowledged and ignored.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.socket_mode.builtin import SocketModeClient
from slack_sdk.socket_mode.client import BaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from channels.base import Channel, Ignored, Inbound, Respond
from channels.errors import ChannelNotConfiguredError
from channels.listener import publish_inbound
from channels.slack.api import call_slack
from channels.slack.channel import SlackChannel
from harness.errors import BusUnavailableError
from harness.runtime import PublishResult, Runtime

log = logging.getLogger(__name__)


def socket_mode_enabled(channel: Channel) -> bool:
    """True for the Slack channel when SLACK_APP_TOKEN is set."""
    return isinstance(channel, SlackChannel) and channel.settings.slack_app_token is not None


def handle_request(
    channel: Channel,
    runtime: Runtime,
    request: SocketModeRequest,
    ack: Callable[[str], None],
    answer: Callable[[str, dict[str, Any]], None] | None = None,
) -> PublishResult | None:
    """Handle one envelope: for `events_api` (a message) and `interactive` (a button press),
    transform its payload and publish it like the webhook routes; then call
    `ack(envelope_id)`. A slash command the channel answers itself (`Respond`: one typed in a
    channel) is acknowledged with that answer instead, `answer(envelope_id, body)`. Returns
    the publish result, or None when nothing was published. Raises `BusUnavailableError`
    before acknowledging when the bus is down."""
    if request.type not in ("events_api", "interactive", "slash_commands"):
        log.info("slack socket envelope of type %s ignored", request.type)
        ack(request.envelope_id)
        return None
    try:
        inbound = _transform(channel, request)
    except Exception:  # a channel bug must not make Slack redeliver the envelope forever
        log.exception("slack socket: the channel could not transform an event")
        ack(request.envelope_id)
        return None
    if isinstance(inbound, Respond) and answer is not None:
        answer(request.envelope_id, inbound.body)
        return None
    result = publish_inbound(inbound, runtime, source="slack socket event")
    ack(request.envelope_id)
    return result


def _transform(channel: Channel, request: SocketModeRequest) -> Inbound:
    """An `events_api` payload as the Events API webhook reads it; an `interactive` one as the
    interactions route reads it, a `slash_commands` one as the commands route."""
    if request.type == "slash_commands":
        if not isinstance(channel, SlackChannel):
            return Ignored("slash command for a channel that takes none")
        return channel.transform_command_payload(request.payload)
    if request.type == "interactive":
        if not isinstance(channel, SlackChannel):
            return Ignored("interaction for a channel that takes none")
        return channel.transform_interaction_payload(request.payload)
    return channel.transform(request.payload, {})


def run_socket_mode(runtime: Runtime, stop: threading.Event, channel: Channel) -> None:
    """Connect to Slack over Socket Mode and publish its events until `stop` is set. Raises
    `ChannelNotConfiguredError` without SLACK_APP_TOKEN, `AuthenticationError` when Slack
    refuses the token, or a `PlatformError` when it cannot connect."""
    settings = channel.settings if isinstance(channel, SlackChannel) else None
    token = settings.slack_app_token if settings is not None else None
    if settings is None or token is None:
        raise ChannelNotConfiguredError("Socket Mode needs the Slack channel and SLACK_APP_TOKEN")
    client = SocketModeClient(
        app_token=token.get_secret_value(),
        web_client=WebClient(base_url=settings.slack_api_base_url),
    )

    def listener(socket: BaseSocketModeClient, request: SocketModeRequest) -> None:
        def ack(envelope_id: str) -> None:
            socket.send_socket_mode_response(SocketModeResponse(envelope_id=envelope_id))

        def answer(envelope_id: str, body: dict[str, Any]) -> None:
            response = SocketModeResponse(envelope_id=envelope_id, payload=body)
            socket.send_socket_mode_response(response)

        try:
            handle_request(channel, runtime, request, ack, answer)
        except BusUnavailableError as exc:
            log.warning("slack socket event not published (%s); Slack will resend it", exc)

    client.socket_mode_request_listeners.append(listener)
    try:
        call_slack("apps.connections.open", client.connect)
        log.info("slack: connected over Socket Mode")
        stop.wait()
    finally:
        client.close()


class SocketModeListener:
    """The `Listener` of the Slack channel with SLACK_APP_TOKEN: `run_socket_mode`."""

    def __init__(self, runtime: Runtime, channel: Channel) -> None:
        self.runtime = runtime
        self.channel = channel

    def run(self, stop: threading.Event) -> None:
        """Hold the Socket Mode connection until `stop` is set (see `run_socket_mode`)."""
        run_socket_mode(self.runtime, stop, self.channel)
