"""A request that ends without an answer says so in the chat: on timeout the request message is
rewritten to show it expired (its buttons removed) and a late press is told so; in cancel mode
a new message cancels the waiting run, and the request shows it was cancelled."""

# ruff: noqa: F811  (`fleet` is the webhook fleet fixture of test_e2e_turn, used by name)

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from harness.agent.handlers import handle_message
from harness.runtime import Runtime, Singleton
from harness.runtime.functions import Function, FunctionRegistry
from harness.runtime.testing import drain
from tests.channels import payloads
from tests.channels.approval_presses import (
    TELEGRAM_HEADERS,
    run_status,
    slack_mention,
    slack_press,
    slack_request,
    telegram_press,
    telegram_request,
    write_in_private,
)
from tests.channels.test_e2e_turn import fleet  # noqa: F401
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi
from tests.runtime_fixtures import ManualClock

WRITE = Reply.tool("write", {"path": "functions/c.py", "content": "c = 1\n"})
ALICE = f"telegram:user:{payloads.ALICE['id']}"


def test_telegram_request_shows_it_expired_and_a_late_press_is_told_so(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    clock: ManualClock,
) -> None:
    # Given a waiting request with its buttons
    model_server.script(WRITE, Reply.answer("nobody answered"))
    run_id = write_in_private(fleet, runtime, 50001, "write the job")
    assert "reply_markup" in telegram_request(telegram_api)
    # When its timeout (30 minutes) passes
    clock.advance(31 * 60)
    drain(runtime)
    # Then the request is rewritten to say it expired, without buttons, and the turn finished
    request = telegram_request(telegram_api)
    assert "Expired: nobody answered within 30m" in request["text"], request["text"]
    assert "reply_markup" not in request
    assert run_status(runtime, run_id) == "completed"
    # And a late press (from a client still showing the buttons) is told it expired
    telegram_press(fleet, telegram_api, "a", 50002)
    drain(runtime)
    assert telegram_api.callback_answers[-1]["text"].startswith("This request has expired")


def test_slack_request_shows_it_expired_and_a_late_press_is_told_so(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    slack_api: FakeSlackApi,
    clock: ManualClock,
    tmp_path: Path,
) -> None:
    # Given a waiting request in #general
    model_server.script(WRITE, Reply.answer("nobody answered"))
    slack_mention(fleet)
    drain(runtime)
    # When its timeout passes
    clock.advance(31 * 60)
    drain(runtime)
    # Then chat.update rewrote it to say it expired, without buttons
    (update,) = slack_api.calls_to("chat.update")
    request = slack_request(slack_api)
    assert "Expired: nobody answered within 30m" in request["text"], request["text"]
    assert "blocks" not in request and update.params["ts"] == request["ts"]
    # And a late press is told privately that it expired, and runs nothing
    slack_press(fleet, slack_api, "approve")
    drain(runtime)
    (ephemeral,) = slack_api.calls_to("chat.postEphemeral")
    assert ephemeral.params["text"].startswith("This request has expired")
    assert not (tmp_path / "workspace" / "functions" / "c.py").exists()


@pytest.fixture
def cancel_mode(fleet: TestClient, runtime: Runtime, registry: FunctionRegistry) -> None:
    """The chat turn with ON_NEW_MESSAGE=cancel (read when workers import the agent)."""
    spec = handle_message.spec.model_copy(
        update={"singleton": Singleton(key="event.data.session_key", mode="cancel")}
    )
    registry.register(Function(spec=spec, handler=handle_message.handler))
    runtime.register_functions()


@pytest.mark.usefixtures("cancel_mode")
def test_cancel_mode_new_message_cancels_the_wait_and_the_request_says_so(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a turn waiting for Alice's approval
    model_server.script(WRITE, Reply.answer("What now?"))
    first = write_in_private(fleet, runtime, 50011, "write the job")
    assert run_status(runtime, first) == "waiting"
    # When she writes something else before answering (no time passes)
    second = write_in_private(fleet, runtime, 50012, "actually, never mind")
    # Then the waiting turn was cancelled and the new one answered
    assert run_status(runtime, first) == "cancelled"
    assert run_status(runtime, second) == "completed"
    assert telegram_api.messages[-1]["text"] == "What now?"
    # And the request shows it was cancelled, without buttons, and nothing was written
    request = telegram_request(telegram_api)
    assert "Cancelled" in request["text"] and "reply_markup" not in request, request
    assert not (tmp_path / "workspace" / "functions" / "c.py").exists()
    # And a press on it afterwards is told it expired
    telegram_press(fleet, telegram_api, "a", 50013)
    drain(runtime)
    assert telegram_api.callback_answers[-1]["text"].startswith("This request has expired")
    assert not (tmp_path / "workspace" / "functions" / "c.py").exists()


def test_forged_callback_naming_no_request_is_told_so_and_changes_nothing(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a waiting request
    model_server.script(WRITE, Reply.answer("written"))
    run_id = write_in_private(fleet, runtime, 50021, "write the job")
    request = telegram_request(telegram_api)
    # When a client sends Approve for a request id that was never issued
    update = {
        "update_id": 50022,
        "callback_query": {
            "id": "cb-forged",
            "from": dict(payloads.ALICE),
            "chat_instance": "42",
            "message": {
                "message_id": request["message_id"],
                "chat": request["chat"],
                "date": 1441645600,
                "text": request["text"],
            },
            "data": "ap:0123456789abcdef0123456789abcdef:a",
        },
    }
    response = fleet.post("/webhooks/telegram", json=update, headers=TELEGRAM_HEADERS)
    drain(runtime)
    # Then it is accepted, answered as unknown, and the real request still waits untouched
    assert response.status_code == 200
    assert telegram_api.callback_answers[-1]["text"].startswith("This request is unknown")
    assert run_status(runtime, run_id) == "waiting"
    assert "reply_markup" in telegram_request(telegram_api)
    assert not (tmp_path / "workspace" / "functions" / "c.py").exists()
