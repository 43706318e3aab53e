"""Approval buttons pressed in Slack over Socket Mode: `interactive` envelopes are handled like
the signed interactions route (the envelope handler is driven directly, no real socket)."""

# ruff: noqa: F811  (`fleet` is the webhook fleet fixture of test_e2e_turn, used by name)

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from slack_sdk.socket_mode.request import SocketModeRequest

from channels.slack.channel import SlackChannel
from channels.slack.socket_mode import handle_request
from harness.events import APPROVAL_GIVEN
from harness.runtime import Runtime
from harness.runtime.testing import drain
from tests.channels import payloads
from tests.channels.approval_presses import slack_press_payload, slack_request
from tests.channels.test_e2e_turn import fleet  # noqa: F401
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.slack_api import FakeSlackApi

WRITE = Reply.tool("write", {"path": "functions/sock.py", "content": "sock = 1\n"})


def _envelope(kind: str, payload: dict[str, object], envelope_id: str) -> SocketModeRequest:
    return SocketModeRequest(type=kind, envelope_id=envelope_id, payload=payload)


def test_socket_mode_press_approves_like_the_interactions_route(
    fleet: TestClient,
    runtime: Runtime,
    slack: SlackChannel,
    model_server: ModelServer,
    slack_api: FakeSlackApi,
    tmp_path: Path,
) -> None:
    # Given a request posted after a mention that came over Socket Mode
    model_server.script(WRITE, Reply.answer("Written."))
    acks: list[str] = []
    handle_request(
        slack, runtime, _envelope("events_api", payloads.slack_app_mention(), "e1"), acks.append
    )
    drain(runtime)
    assert "blocks" in slack_request(slack_api)
    # When Ada presses Approve, delivered as an `interactive` envelope
    press = _envelope("interactive", slack_press_payload(slack_api, "approve"), "e2")
    result = handle_request(slack, runtime, press, acks.append)
    drain(runtime)
    # Then the press was published and acknowledged, the call ran, and the request says who
    assert result is not None and not result.duplicate
    assert acks == ["e1", "e2"]
    assert (tmp_path / "workspace" / "functions" / "sock.py").read_text() == "sock = 1\n"
    assert "Approved by u0user" in slack_request(slack_api)["text"]
    assert slack_api.messages[-1]["text"] == "Written."


def test_socket_mode_press_redelivered_is_published_once(
    runtime: Runtime, slack: SlackChannel
) -> None:
    # Given a press payload (Slack resends an envelope it saw no ack for)
    payload = {
        "type": "block_actions",
        "user": {"id": "U0USER", "name": "ada"},
        "team": {"id": "T1"},
        "channel": {"id": "C123ABC456"},
        "container": {"message_ts": "1.1", "channel_id": "C123ABC456"},
        "actions": [
            {"action_id": "harness_approval_deny", "value": "abc", "action_ts": "2.000001"}
        ],
    }
    # When the same press arrives twice
    acks: list[str] = []
    first = handle_request(slack, runtime, _envelope("interactive", payload, "e1"), acks.append)
    again = handle_request(slack, runtime, _envelope("interactive", payload, "e2"), acks.append)
    # Then both are acknowledged and one answer reaches the bus
    assert acks == ["e1", "e2"]
    assert first is not None and not first.duplicate
    assert again is not None and again.duplicate
    names = [e[1]["name"] for e in runtime.redis.xrange(runtime.keys.events)]
    assert names.count(APPROVAL_GIVEN) == 1, names


def test_socket_mode_interaction_that_is_not_an_approval_is_acknowledged_and_ignored(
    runtime: Runtime, slack: SlackChannel
) -> None:
    # Given a global shortcut (an interaction that is no button of ours)
    shortcut = {"type": "shortcut", "callback_id": "x", "user": {"id": "U0USER"}}
    acks: list[str] = []
    # When it arrives over Socket Mode
    result = handle_request(slack, runtime, _envelope("interactive", shortcut, "e9"), acks.append)
    # Then it is acknowledged and nothing is published
    assert result is None
    assert acks == ["e9"]
    assert runtime.redis.xlen(runtime.keys.events) == 0
