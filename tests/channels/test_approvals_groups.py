"""Who may answer a request in a group (`AGENT_APPROVAL_GROUP_ANSWER`), through the real
webhooks and the fake Telegram and Slack servers: `sender` (the default) lets only the person
whose message caused it answer; `allowed` lets any allowed member answer too, never a member
who is not allowed."""

# ruff: noqa: F811  (`fleet` is the webhook fleet fixture of test_e2e_turn, used by name)

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import HANDLE_MESSAGE
from harness.records.pairing import RedisAccessStore
from harness.runtime import Runtime, run_id_for
from harness.runtime.testing import drain
from tests.agent.conftest import make_settings
from tests.channels import payloads
from tests.channels.approval_presses import (
    BOB,
    MALLORY,
    TELEGRAM_HEADERS,
    run_status,
    slack_mention,
    slack_press,
    slack_request,
    telegram_press,
    telegram_request,
)
from tests.channels.test_e2e_turn import fleet  # noqa: F401
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi

GROUP_ID = payloads.GROUP_CHAT["id"]
WRITE = Reply.tool("write", {"path": "functions/g.py", "content": "g = 1\n"})


@pytest.fixture
def members(fleet: TestClient, runtime: Runtime) -> None:
    """The group and #general are paired; Bob (Telegram) and U0BOB (Slack) are allowed
    people; Mallory and U0EVE are members no one allowed."""
    store = RedisAccessStore(runtime)
    store.grant(f"telegram:chat:{GROUP_ID}", "Wonderland", "test")
    store.grant(f"telegram:user:{BOB['id']}", "Bob", "test")
    store.grant("slack:user:U0BOB", "Bob", "test")


@pytest.fixture
def allowed_answers(fleet: TestClient, model_server: ModelServer, tmp_path: Path) -> None:
    """The agent with AGENT_APPROVAL_GROUP_ANSWER=allowed."""
    settings = make_settings(
        tmp_path / "workspace",
        model_server,
        stream_replies=False,
        agent_approval_group_answer="allowed",
    )
    set_agent_deps(build_deps(settings))


def _ask_in_telegram_group(fleet: TestClient, runtime: Runtime, model: ModelServer) -> str:
    """Alice mentions the bot in the group; the model wants a risky write. The run's id."""
    model.script(WRITE, Reply.answer("written"))
    response = fleet.post(
        "/webhooks/telegram", json=payloads.tg_group_mention(40001), headers=TELEGRAM_HEADERS
    )
    assert response.status_code == 200, response.text
    drain(runtime)
    return run_id_for(HANDLE_MESSAGE, response.json()["event_id"])


def _ask_in_slack_channel(fleet: TestClient, runtime: Runtime, model: ModelServer) -> None:
    """Ada mentions the bot in #general; the model wants a risky write."""
    model.script(WRITE, Reply.answer("Written."))
    slack_mention(fleet)
    drain(runtime)


def _written(tmp_path: Path) -> Path:
    """The file the scripted risky write creates once the call is approved."""
    return tmp_path / "workspace" / "functions" / "g.py"


def _assert_refused_on_telegram(
    telegram_api: FakeTelegramApi, runtime: Runtime, run_id: str, tmp_path: Path
) -> None:
    """The presser was told the request is not theirs, the run still waits, nothing ran."""
    assert telegram_api.callback_answers[-1]["text"].startswith("Only the person who asked")
    assert run_status(runtime, run_id) == "waiting"
    assert not _written(tmp_path).exists(), "a refused press must not run the call"


@pytest.mark.usefixtures("members")
def test_telegram_group_by_default_another_allowed_member_cannot_answer(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a request in the group that Alice's message caused (group answer: sender)
    run_id = _ask_in_telegram_group(fleet, runtime, model_server)
    # When Bob, an allowed person, presses Approve
    telegram_press(fleet, telegram_api, "a", 40002, user=BOB)
    drain(runtime)
    # Then he is told it is not his to answer, nothing ran, and the request keeps its buttons
    _assert_refused_on_telegram(telegram_api, runtime, run_id, tmp_path)
    assert "reply_markup" in telegram_request(telegram_api)


@pytest.mark.usefixtures("members", "allowed_answers")
def test_telegram_group_allowed_mode_an_allowed_members_press_counts(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a request in the group that Alice's message caused (group answer: allowed)
    run_id = _ask_in_telegram_group(fleet, runtime, model_server)
    # When Bob, an allowed person, presses Approve
    telegram_press(fleet, telegram_api, "a", 40002, user=BOB)
    drain(runtime)
    # Then the call ran, the turn finished, and the request shows Bob approved it
    assert _written(tmp_path).read_text() == "g = 1\n"
    assert run_status(runtime, run_id) == "completed"
    assert "Approved by Bob" in telegram_request(telegram_api)["text"]


@pytest.mark.usefixtures("members", "allowed_answers")
def test_telegram_group_allowed_mode_a_member_not_allowed_never_counts(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a request in the group (group answer: allowed)
    run_id = _ask_in_telegram_group(fleet, runtime, model_server)
    # When Mallory, a member nobody allowed, presses Approve
    telegram_press(fleet, telegram_api, "a", 40002, user=MALLORY)
    drain(runtime)
    # Then she is refused and the run still waits, with nothing written
    _assert_refused_on_telegram(telegram_api, runtime, run_id, tmp_path)


@pytest.mark.usefixtures("members")
def test_slack_channel_by_default_another_allowed_member_cannot_answer(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    slack_api: FakeSlackApi,
    tmp_path: Path,
) -> None:
    # Given a request in #general that Ada's mention caused (group answer: sender)
    _ask_in_slack_channel(fleet, runtime, model_server)
    # When Bob, an allowed person, presses Approve
    slack_press(fleet, slack_api, "approve", user="U0BOB")
    drain(runtime)
    # Then only Bob is told it is not his, and the request keeps its buttons
    (ephemeral,) = slack_api.calls_to("chat.postEphemeral")
    assert (ephemeral.params["user"], ephemeral.params["text"][:26]) == (
        "U0BOB",
        "Only the person who asked ",
    )
    assert "blocks" in slack_request(slack_api)
    assert not _written(tmp_path).exists()


@pytest.mark.usefixtures("members", "allowed_answers")
def test_slack_channel_allowed_mode_counts_an_allowed_member_but_not_another(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    slack_api: FakeSlackApi,
    tmp_path: Path,
) -> None:
    # Given a request in #general (group answer: allowed)
    _ask_in_slack_channel(fleet, runtime, model_server)
    # When Eve, whom nobody allowed, presses Approve
    slack_press(fleet, slack_api, "approve", user="U0EVE", action_ts="1.000001")
    drain(runtime)
    # Then she is refused privately and nothing ran
    (ephemeral,) = slack_api.calls_to("chat.postEphemeral")
    assert ephemeral.params["user"] == "U0EVE"
    assert not _written(tmp_path).exists()
    # When Bob, an allowed person, presses Approve
    slack_press(fleet, slack_api, "approve", user="U0BOB", action_ts="1.000002")
    drain(runtime)
    # Then the call ran and the request shows Bob approved it
    assert _written(tmp_path).read_text() == "g = 1\n"
    assert "Approved by u0bob" in slack_request(slack_api)["text"]


@pytest.mark.usefixtures("members", "allowed_answers")
def test_the_run_records_who_answered_and_when(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a request in the group, answered by Bob
    run_id = _ask_in_telegram_group(fleet, runtime, model_server)
    pressed_at = runtime.now_ms()
    telegram_press(fleet, telegram_api, "d", 40002, user=BOB)
    drain(runtime)
    # When the run's journal is read (what `harness runs show` prints)
    answers = [
        record["v"]["data"]
        for key, record in runtime.ledger.journal(run_id).items()
        if key.startswith("approval:") and record.get("v")
    ]
    # Then it holds the decision, who made it and when
    assert [(a["decision"], a["by"], a["at"]) for a in answers] == [("deny", "Bob", pressed_at)]
