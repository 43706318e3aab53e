"""A whole turn: the platform's webhook -> `agent.message.received` -> the agent (scripted model,
real SDK) -> `agent.reply.ready` -> `send-reply` -> the call the fake platform recorded."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from channels import registry as channel_registry
from channels.delivery import SEND_REPLY
from channels.handlers import FUNCTIONS
from channels.keeper import process_keeper
from channels.slack.channel import SlackChannel
from channels.telegram.channel import TelegramChannel
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import HANDLE_MESSAGE, handle_message
from harness.records.pairing import RedisAccessStore
from harness.runtime import Runtime, run_id_for, set_runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from harness.settings import Settings
from harness.web import create_app
from harness.web.webhooks import router
from tests.agent.conftest import make_settings
from tests.channels import payloads
from tests.channels.approval_presses import TELEGRAM_HEADERS, slack_signed
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi

ANSWER = "The hour of the pearl is **now**."


def answer_once_acknowledged(model_server: ModelServer) -> None:
    """Have the model answer `ANSWER` once the process's keeper sent what it had to (the
    acknowledgement goes out beside the turn, on the keeper's threads), so what the
    platform saw does not depend on which thread ran first."""

    def answer(api: str, body: object) -> Reply:
        assert process_keeper().settle(), "the keeper must settle"
        return Reply.answer(ANSWER)

    model_server.respond_with(answer)


@pytest.fixture
def fleet(
    runtime: Runtime,
    registry: FunctionRegistry,
    model_server: ModelServer,
    telegram: TelegramChannel,
    slack: SlackChannel,
    tmp_path: Path,
) -> Iterator[TestClient]:
    """The web app with the webhook routes, the agent and the channel functions, all on one
    fakeredis runtime; the model and both platforms are local fakes."""
    for fn in (handle_message, *FUNCTIONS):
        registry.register(fn)
    runtime.register_functions()
    set_runtime(runtime)
    # The people in these tests paired already (DM_POLICY=pairing, the default).
    store = RedisAccessStore(runtime)
    store.grant(f"telegram:chat:{payloads.FORUM_CHAT['id']}", "forum", "test")
    store.grant("slack:user:U0USER", "Alice", "test")
    store.grant("slack:chat:C123ABC456", "#general", "test")
    # Replies are not streamed here, so what is posted does not depend on timing; drafts
    # have their own tests (tests/channels/test_streamed_drafts.py).
    set_agent_deps(
        build_deps(make_settings(tmp_path / "workspace", model_server, stream_replies=False))
    )
    channel_registry.reset()
    channel_registry.register("telegram", lambda: telegram)
    channel_registry.register("slack", lambda: slack)
    settings = Settings(_env_file=None, agent_workspace=tmp_path)  # type: ignore[call-arg]
    with TestClient(create_app(lambda: runtime, settings, routers=[router])) as client:
        yield client
    channel_registry.reset()
    set_agent_deps(None)
    set_runtime(None)


def test_e2e_telegram_forum_topic_turn_is_answered_in_the_topic(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a model that answers at once
    answer_once_acknowledged(model_server)
    update = payloads.tg_forum_topic()
    # When Telegram delivers a message in a forum topic and the fleet runs
    response = fleet.post("/webhooks/telegram", json=update, headers=TELEGRAM_HEADERS)
    assert response.status_code == 200, response.text
    drain(runtime)
    # Then the model saw the message, and the answer went to the same topic, replying to it
    assert "Why is a raven like a writing-desk?" in json.dumps(model_server.requests[0].body)
    (sent,) = telegram_api.messages
    assert sent["text"] == "The hour of the pearl is now."
    assert (sent["parse_mode"], sent["raw_text"]) == (
        "HTML",
        "The hour of the pearl is <b>now</b>.",
    )
    assert sent["chat"]["id"] == payloads.FORUM_CHAT["id"]
    assert sent["message_thread_id"] == 42
    assert sent["reply_to_message"] == {"message_id": 120}
    # And "typing" was shown in that topic meanwhile
    (typing,) = telegram_api.calls_to("sendChatAction")
    assert typing.params["message_thread_id"] == 42
    agent_run = runtime.ledger.run(run_id_for(HANDLE_MESSAGE, response.json()["event_id"]))
    assert agent_run is not None and agent_run.status == "completed", f"got {agent_run}"


def test_e2e_slack_mention_is_answered_in_its_thread(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    slack_api: FakeSlackApi,
) -> None:
    answer_once_acknowledged(model_server)
    payload = payloads.slack_app_mention()
    body = json.dumps(payload).encode()
    headers = {**slack_signed(body), "Content-Type": "application/json"}
    # When Slack delivers a mention in a channel and the fleet runs
    response = fleet.post("/webhooks/slack", content=body, headers=headers)
    assert response.status_code == 200, response.text
    drain(runtime)
    # Then the model saw the message without the mention, and the answer is in the thread
    assert "What is the hour of the pearl" in json.dumps(model_server.requests[0].body)
    (posted,) = slack_api.calls_to("chat.postMessage")
    ts = payload["event"]["ts"]
    assert posted.params["channel"] == "C123ABC456"
    assert posted.params["thread_ts"] == ts
    assert posted.params["text"] == "The hour of the pearl is *now*."
    # And the user's message went from :eyes: to :white_check_mark:
    assert slack_api.reactions == {("C123ABC456", ts, "white_check_mark")}
    reply_runs = [r for r in runtime.ledger.recent(20) if r.function_id == SEND_REPLY]
    assert [r.status for r in reply_runs] == ["completed"]


def test_e2e_telegram_stranger_gets_a_pairing_code_then_is_served_once_approved(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a person in a private chat nobody approved
    # When they write through the real webhook
    fleet.post("/webhooks/telegram", json=payloads.tg_private_text(20001), headers=TELEGRAM_HEADERS)
    drain(runtime)
    # Then they got one message with a code, no typing, and the model was never called
    assert process_keeper().settle(), "the keeper must settle"
    (sent,) = telegram_api.messages
    code = re.search(r"harness pair approve ([A-Z2-9]{6})", sent["text"])
    assert code is not None, sent["text"]
    assert model_server.requests == []
    assert telegram_api.calls_to("sendChatAction") == []
    # When the owner approves the code and the person writes again
    assert RedisAccessStore(runtime).approve(code.group(1)) is not None
    model_server.script(Reply.answer(ANSWER))
    fleet.post("/webhooks/telegram", json=payloads.tg_private_text(20002), headers=TELEGRAM_HEADERS)
    drain(runtime)
    # Then the agent answers
    assert len(model_server.requests) == 1
    assert telegram_api.messages[-1]["text"] == "The hour of the pearl is now."
