"""Chat commands through the real webhooks: a Telegram `/status` or a Slack slash command is
answered in the chat with no model call and nothing in the transcript; `/stop` stops the
turn that waits; a stranger gets the pairing code; the menu is registered with Telegram."""

# ruff: noqa: F811  (`fleet` is the webhook fleet fixture of test_e2e_turn, used by name)

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient

from channels.telegram.channel import TelegramChannel
from harness.agent.chat_commands.handler import chat_command
from harness.agent.deps import agent_deps
from harness.events.commands import COMMANDS
from harness.records.pairing import RedisAccessStore
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.channels import payloads
from tests.channels.approval_presses import (
    TELEGRAM_HEADERS,
    run_status,
    slack_signed,
    write_in_private,
)
from tests.channels.test_e2e_turn import fleet  # noqa: F401
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi

PRIVATE = f"telegram-{payloads.PRIVATE_CHAT['id']}"


@pytest.fixture
def commands(fleet: TestClient, runtime: Runtime, registry: FunctionRegistry) -> TestClient:
    """The webhook fleet with `agent-chat-command` too (workers load it with the agent)."""
    registry.register(chat_command)
    runtime.register_functions()
    RedisAccessStore(runtime).grant(f"telegram:user:{payloads.ALICE['id']}", "Alice", "test")
    return fleet


def _telegram(fleet: TestClient, runtime: Runtime, update: dict[str, object]) -> None:
    response = fleet.post("/webhooks/telegram", json=update, headers=TELEGRAM_HEADERS)
    assert response.status_code == 200, response.text
    drain(runtime)


def test_telegram_status_is_answered_without_the_model(
    commands: TestClient, runtime: Runtime, model_server: ModelServer, telegram_api: FakeTelegramApi
) -> None:
    # Given Alice talked to the agent once
    model_server.script(Reply.answer("Hello Alice."))
    _telegram(commands, runtime, payloads.tg_private_text(40001, "hi"))
    calls = len(model_server.requests)
    # When she sends /status
    _telegram(commands, runtime, payloads.tg_private_text(40002, "/status"))
    # Then the answer is posted in her chat, with no model call and nothing in the transcript
    status = telegram_api.messages[-1]["text"]
    assert "Conversation: 2 messages" in status, status
    assert len(model_server.requests) == calls
    assert len(agent_deps().sessions.load(PRIVATE)) == 2


def test_telegram_command_in_a_group_for_another_bot_is_ignored(
    commands: TestClient,
    runtime: Runtime,
    telegram: TelegramChannel,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given the group is paired, and the bot knows its own username
    telegram.warm_up()
    assert telegram.wait_idle()
    RedisAccessStore(runtime).grant(f"telegram:chat:{payloads.GROUP_CHAT['id']}", "g", "test")
    group = payloads.tg_group_mention(40010)
    # When someone sends /help@OtherBot, then /help@<our bot>
    group["message"]["text"] = "/help@OtherBot"  # type: ignore[index]
    _telegram(commands, runtime, group)
    assert telegram_api.messages == []
    group = payloads.tg_group_mention(40011)
    group["message"]["text"] = "/help@harness_test_bot"  # type: ignore[index]
    _telegram(commands, runtime, group)
    # Then only ours is answered, with the list
    (sent,) = telegram_api.messages
    assert "/stop" in sent["text"], sent


def test_telegram_stop_cancels_the_turn_waiting_on_an_approval(
    commands: TestClient, runtime: Runtime, model_server: ModelServer, telegram_api: FakeTelegramApi
) -> None:
    # Given a turn waiting for Alice's approval of a risky write
    model_server.script(Reply.tool("write", {"path": "functions/a.py", "content": "x = 1\n"}))
    turn = write_in_private(commands, runtime, 40020, "write it")
    assert run_status(runtime, turn) == "waiting"
    # When she sends /stop
    _telegram(commands, runtime, payloads.tg_private_text(40021, "/stop"))
    # Then the turn is cancelled and was never steered: one model call in all
    assert run_status(runtime, turn) == "cancelled"
    assert len(model_server.requests) == 1
    assert any(m["text"] == "Stopping." for m in telegram_api.messages)


def test_telegram_stranger_command_gets_the_pairing_code(
    commands: TestClient, runtime: Runtime, telegram_api: FakeTelegramApi
) -> None:
    # Given Mallory, never paired
    update = payloads.tg_private_text(40030, "/pair")
    update["message"]["from"] = {"id": 6666666, "is_bot": False, "first_name": "Mallory"}  # type: ignore[index]
    update["message"]["chat"] = {"id": 6666666, "type": "private", "first_name": "Mallory"}  # type: ignore[index]
    # When she sends /pair
    _telegram(commands, runtime, update)
    # Then she gets a pairing code, and nothing else
    (sent,) = telegram_api.messages
    assert "harness pair approve" in sent["text"], sent


def test_telegram_setup_registers_the_commands(
    telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # When `harness setup telegram` runs
    telegram.setup()
    # Then the bot's menu lists every command
    assert telegram_api.commands is not None
    assert [c["command"] for c in telegram_api.commands] == list(COMMANDS)


def _slash(fleet: TestClient, runtime: Runtime, command: str, text: str = "") -> int:
    form = {
        "team_id": "T0001", "channel_id": "D024BE91L", "user_id": "U0USER",
        "command": command, "text": text, "trigger_id": f"13345224609.{command[1:]}{text}",
        "response_url": "https://hooks.slack.com/commands/T0001/1/abc",
    }  # fmt: skip
    body = urlencode(form).encode()
    headers = {**slack_signed(body), "Content-Type": "application/x-www-form-urlencoded"}
    response = fleet.post("/webhooks/slack/commands", content=body, headers=headers)
    drain(runtime)
    return response.status_code


def test_slack_slash_command_is_acked_and_answered_in_the_dm(
    commands: TestClient, runtime: Runtime, model_server: ModelServer, slack_api: FakeSlackApi
) -> None:
    # Given Alice (paired) talked to the agent in her DM
    model_server.script(Reply.answer("Hello Alice."))
    body = json.dumps(payloads.slack_dm()).encode()
    headers = {**slack_signed(body), "Content-Type": "application/json"}
    assert commands.post("/webhooks/slack", content=body, headers=headers).status_code == 200
    drain(runtime)
    # When she types the slash command /new
    assert _slash(commands, runtime, "/new") == 200
    # Then the old conversation is archived, the answer is posted in her DM, no model call
    assert agent_deps().sessions.load("slack-D024BE91L") == []
    assert slack_api.messages[-1]["text"].startswith("New conversation started.")
    assert len(model_server.requests) == 1


def test_slack_signed_badly_is_refused(commands: TestClient) -> None:
    body = b"command=%2Fstatus&channel_id=D1&user_id=U1"
    headers = {
        **slack_signed(body, secret="wrong"),
        "Content-Type": "application/x-www-form-urlencoded",
    }
    assert (
        commands.post("/webhooks/slack/commands", content=body, headers=headers).status_code == 401
    )


def test_slack_app_slash_command_takes_the_chat_command_as_its_text(
    commands: TestClient, runtime: Runtime, model_server: ModelServer, slack_api: FakeSlackApi
) -> None:
    # When Alice types `/harness help` (the manifest's one slash command), then `/harness`
    assert _slash(commands, runtime, "/harness", "help") == 200
    assert _slash(commands, runtime, "/harness", "") == 200
    # Then both are answered with the list, in her DM, without a model call
    answers = [m["text"] for m in slack_api.messages]
    assert len(answers) == 2 and all("/stop" in a for a in answers), answers
    assert model_server.requests == []


def test_slack_slash_command_in_a_channel_is_answered_ephemerally_and_stops_nothing(
    commands: TestClient, runtime: Runtime, slack_api: FakeSlackApi
) -> None:
    # Given the app's slash command with a command that acts on a conversation
    form = {
        "team_id": "T0001", "channel_id": "C123ABC456", "user_id": "U0USER",
        "command": "/harness", "text": "reset", "trigger_id": "13345224609.reset",
    }  # fmt: skip
    body = urlencode(form).encode()
    headers = {**slack_signed(body), "Content-Type": "application/x-www-form-urlencoded"}
    # When Alice types `/harness reset` in the channel
    response = commands.post("/webhooks/slack/commands", content=body, headers=headers)
    drain(runtime)
    # Then Slack gets the ephemeral answer in the response, and nothing was published or posted
    assert response.status_code == 200
    assert response.json()["response_type"] == "ephemeral"
    assert "!reset" in response.json()["text"], response.json()
    assert runtime.redis.xlen(runtime.keys.events) == 0
    assert slack_api.messages == []
