"""Slack Socket Mode envelopes are published like webhooks, then acknowledged (no real socket:
the envelope handler is driven directly)."""

from __future__ import annotations

import json
import threading

import fakeredis
import pytest
from slack_sdk.socket_mode.request import SocketModeRequest

from channels.errors import ChannelNotConfiguredError, PlatformError
from channels.slack.channel import SlackChannel
from channels.slack.socket_mode import handle_request, run_socket_mode, socket_mode_enabled
from channels.telegram.channel import TelegramChannel
from harness.errors import BusUnavailableError
from harness.events import MESSAGE_RECEIVED
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from tests.channels import payloads
from tests.channels.conftest import slack_settings
from tests.fakes.slack_api import FakeSlackApi


def envelope(
    kind: str = "events_api", envelope_id: str = "env-1", **extra: object
) -> SocketModeRequest:
    payload = payloads.slack_app_mention() if kind == "events_api" else {"command": "/harness"}
    return SocketModeRequest(type=kind, envelope_id=envelope_id, payload=payload, **extra)  # type: ignore[arg-type]


def slash_envelope(channel_id: str, command: str, text: str) -> SocketModeRequest:
    """A `slash_commands` envelope ("env-1"): the slash command's fields, as the form has them."""
    fields = {"channel_id": channel_id, "user_id": "U0USER", "team_id": "T1",
              "command": command, "text": text, "trigger_id": "1.2"}  # fmt: skip
    return SocketModeRequest(type="slash_commands", envelope_id="env-1", payload=fields)


def test_socket_event_is_published_before_it_is_acknowledged(
    runtime: Runtime, slack: SlackChannel
) -> None:
    acks: list[tuple[str, int]] = []

    def ack(envelope_id: str) -> None:
        acks.append((envelope_id, runtime.redis.xlen(runtime.keys.events)))

    result = handle_request(slack, runtime, envelope(), ack)

    assert result is not None and not result.duplicate
    assert acks == [("env-1", 1)], "the event must be on the bus when Slack gets the ack"
    (entry,) = runtime.redis.xrange(runtime.keys.events)
    event = json.loads(entry[1]["event"])
    assert event["name"] == MESSAGE_RECEIVED
    assert event["data"]["destination"]["thread_id"] == "1515449522.000016"


def test_socket_event_redelivered_by_slack_is_published_once(
    runtime: Runtime, slack: SlackChannel
) -> None:
    acks: list[str] = []
    handle_request(slack, runtime, envelope(), acks.append)
    again = handle_request(
        slack,
        runtime,
        envelope(envelope_id="env-2", retry_attempt=1, retry_reason="timeout"),
        acks.append,
    )
    assert again is not None and again.duplicate
    assert acks == ["env-1", "env-2"]
    assert runtime.redis.xlen(runtime.keys.events) == 1


def test_socket_envelope_of_another_type_is_acknowledged_and_ignored(
    runtime: Runtime, slack: SlackChannel
) -> None:
    acks: list[str] = []
    assert handle_request(slack, runtime, envelope("events_api_v9"), acks.append) is None
    assert acks == ["env-1"]
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_socket_slash_command_is_published_as_a_command_message(
    runtime: Runtime, slack: SlackChannel
) -> None:
    # Given a `slash_commands` envelope: the slash command's fields, as the form carries them
    request = slash_envelope("D024BE91L", "/status", "")
    acks: list[str] = []
    # When it is handled
    result = handle_request(slack, runtime, request, acks.append)
    # Then the command is on the bus as the DM's message, marked a command, then acknowledged
    assert result is not None and acks == ["env-1"]
    (entry,) = runtime.redis.xrange(runtime.keys.events)
    data = json.loads(entry[1]["event"])["data"]
    assert (data["message"], data["command"], data["session_key"]) == (
        "/status",
        "status",
        "slack-D024BE91L",
    )


def test_socket_event_is_not_acknowledged_while_redis_is_down(
    registry: FunctionRegistry, slack: SlackChannel
) -> None:
    # Given the bus is unreachable
    server = fakeredis.FakeServer()
    server.connected = False
    down = Runtime(
        redis=fakeredis.FakeRedis(server=server, decode_responses=True),
        kicker=RecordingKicker(),
        registry=registry,
    )
    acks: list[str] = []
    # When an event arrives, it is not acknowledged, so Slack will deliver it again
    with pytest.raises(BusUnavailableError):
        handle_request(slack, down, envelope(), acks.append)
    assert acks == []


def test_socket_mode_is_enabled_by_the_app_token_only(
    slack_api: FakeSlackApi, slack: SlackChannel, telegram: TelegramChannel
) -> None:
    with_token = SlackChannel(slack_settings(slack_api, slack_app_token="xapp-1-A1-1-abc"))
    assert socket_mode_enabled(with_token)
    assert not socket_mode_enabled(slack)
    assert not socket_mode_enabled(telegram)


def test_socket_mode_without_an_app_token_is_not_configured(
    runtime: Runtime, slack: SlackChannel
) -> None:
    with pytest.raises(ChannelNotConfiguredError, match="SLACK_APP_TOKEN"):
        run_socket_mode(runtime, threading.Event(), slack)


def test_socket_mode_connection_refused_by_slack_is_a_platform_error(
    runtime: Runtime, slack_api: FakeSlackApi
) -> None:
    # The fake Web API has no apps.connections.open, so Slack "refuses" the connection
    with_token = SlackChannel(slack_settings(slack_api, slack_app_token="xapp-1-A1-1-abc"))
    with pytest.raises(PlatformError, match=r"apps\.connections\.open"):
        run_socket_mode(runtime, threading.Event(), with_token)
    (call,) = slack_api.calls_to("apps.connections.open")
    assert call.token == "xapp-1-A1-1-abc", "the app-level token must be used"


def test_socket_slash_command_in_a_channel_is_answered_in_its_acknowledgement(
    runtime: Runtime, slack: SlackChannel
) -> None:
    # Given `/harness status` typed in a channel, over Socket Mode
    request = slash_envelope("C123ABC456", "/harness", "status")
    acks: list[str] = []
    answers: list[tuple[str, dict[str, object]]] = []
    # When it is handled
    result = handle_request(
        slack, runtime, request, acks.append, lambda e, body: answers.append((e, body))
    )
    # Then the envelope is acknowledged with the ephemeral answer, and nothing is published
    assert result is None and acks == []
    ((envelope_id, body),) = answers
    assert envelope_id == "env-1" and body["response_type"] == "ephemeral"
    assert runtime.redis.xlen(runtime.keys.events) == 0
