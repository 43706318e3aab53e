"""Approvals through the real Telegram webhook: a risky tool call posts buttons, the run
suspends, and a press (or the timeout) decides what the model sees."""

# ruff: noqa: F811  (`fleet` is the webhook fleet fixture of test_e2e_turn, used by name)

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from harness.agent.approvals.text import approval_by_text
from harness.agent.handlers import run_subagent
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.channels import payloads
from tests.channels.approval_presses import (
    MALLORY,
    TELEGRAM_HEADERS,
    run_status,
    telegram_press,
    write_in_private,
)
from tests.channels.test_e2e_turn import fleet  # noqa: F401
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi
from tests.runtime_fixtures import ManualClock

RISKY = Reply.tool("write", {"path": "functions/hello.py", "content": "print('hi')\n"})
ALICE_ID = payloads.ALICE["id"]


def _ask(fleet: TestClient, runtime: Runtime, model: ModelServer, *after: Reply) -> str:
    """Alice (paired) asks in her private chat; the model wants a risky write. Returns the
    turn's run id, once the run waits."""
    return _ask_with(fleet, runtime, model, RISKY, *after)


def _ask_with(fleet: TestClient, runtime: Runtime, model: ModelServer, *script: Reply) -> str:
    model.script(*script)
    return write_in_private(fleet, runtime, 30001, "Hello there")


def _tool_results(model: ModelServer) -> list[str]:
    """Every tool_result content the model was sent, in order."""
    found: list[str] = []
    for request in model.requests:
        for message in request.body.get("messages", []):
            content = message.get("content")
            if isinstance(content, list):
                for block in content:
                    if block.get("type") == "tool_result":
                        found.append(json.dumps(block.get("content")))
    return found


def test_approval_request_shows_buttons_and_the_run_waits(
    fleet: TestClient, runtime: Runtime, model_server: ModelServer, telegram_api: FakeTelegramApi
) -> None:
    # Given / When the model wants to write in functions/
    run_id = _ask(fleet, runtime, model_server, Reply.answer("done"))
    # Then a request with three buttons is posted in the chat, naming the path
    (request,) = telegram_api.messages
    assert "functions/hello.py" in request["text"]
    rows = request["reply_markup"]["inline_keyboard"]
    assert [b["text"] for row in rows for b in row] == [
        "✅ Approve",
        "❌ Deny",
        "✅ Allow for this session",
    ]
    # And the run waits without a worker, and the model has not been called again
    assert run_status(runtime, run_id) == "waiting"
    assert len(model_server.requests) == 1


def test_approved_call_runs_and_the_request_shows_who_approved(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a waiting request
    run_id = _ask(fleet, runtime, model_server, Reply.answer("written"))
    # When Alice presses Approve
    telegram_press(fleet, telegram_api, "a", 30002)
    drain(runtime)
    # Then the file was written and the turn finished with the model's answer
    assert (tmp_path / "workspace" / "functions" / "hello.py").read_text() == "print('hi')\n"
    assert run_status(runtime, run_id) == "completed"
    assert telegram_api.messages[-1]["text"] == "written"
    # And the press was answered, and the request edited to show the decision without buttons
    assert [a["text"] for a in telegram_api.callback_answers] == ["✅ Approved"]
    request = telegram_api.messages[0]
    assert "Approved by Alice" in request["text"] and "reply_markup" not in request


def test_denied_call_does_not_run_and_the_model_sees_the_refusal(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a waiting request
    _ask(fleet, runtime, model_server, Reply.answer("ok, I won't"))
    # When Alice presses Deny
    telegram_press(fleet, telegram_api, "d", 30002)
    drain(runtime)
    # Then nothing was written, and the model was told who denied it
    assert not (tmp_path / "workspace" / "functions" / "hello.py").exists()
    (result,) = _tool_results(model_server)
    assert "denied" in result and "Alice" in result, result


def test_second_press_changes_nothing_and_is_told_so(
    fleet: TestClient, runtime: Runtime, model_server: ModelServer, telegram_api: FakeTelegramApi
) -> None:
    # Given a request Alice approved
    _ask(fleet, runtime, model_server, Reply.answer("written"))
    telegram_press(fleet, telegram_api, "a", 30002)
    drain(runtime)
    # When she then presses Deny on the same message
    telegram_press(fleet, telegram_api, "d", 30003)
    drain(runtime)
    # Then she is told it was already answered, and the model saw one result, not a refusal
    assert telegram_api.callback_answers[-1]["text"].startswith("Already answered: ✅ Approved")
    assert ["denied" in r for r in _tool_results(model_server)] == [False]


def test_press_by_someone_else_is_refused_and_the_run_keeps_waiting(
    fleet: TestClient, runtime: Runtime, model_server: ModelServer, telegram_api: FakeTelegramApi
) -> None:
    # Given a request Alice's message caused
    run_id = _ask(fleet, runtime, model_server, Reply.answer("written"))
    # When Mallory (not the asker) presses Approve with a forged callback
    telegram_press(fleet, telegram_api, "a", 30002, user=MALLORY)
    drain(runtime)
    # Then she is told she may not answer, and the run still waits
    assert telegram_api.callback_answers[-1]["text"].startswith("Only the person who asked")
    assert run_status(runtime, run_id) == "waiting"


def test_unanswered_request_times_out_and_the_model_is_told(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    clock: ManualClock,
) -> None:
    # Given a waiting request
    run_id = _ask(fleet, runtime, model_server, Reply.answer("nobody answered"))
    # When the timeout (30 minutes by default) passes
    clock.advance(31 * 60)
    drain(runtime)
    # Then the model was told nobody approved it, and the turn finished
    (result,) = _tool_results(model_server)
    assert "nobody approved" in result, result
    assert run_status(runtime, run_id) == "completed"
    # And a late press is told the request expired
    telegram_press(fleet, telegram_api, "a", 30009)
    drain(runtime)
    assert telegram_api.callback_answers[-1]["text"].startswith("This request has expired")


def test_allow_for_session_lets_the_next_call_of_that_tool_run_without_asking(
    fleet: TestClient, runtime: Runtime, model_server: ModelServer, telegram_api: FakeTelegramApi
) -> None:
    # Given Alice allowed writes for this session
    _ask(fleet, runtime, model_server, Reply.answer("written"))
    telegram_press(fleet, telegram_api, "s", 30002)
    drain(runtime)
    asked = len(telegram_api.calls_to("sendMessage"))
    # When the model writes in functions/ again in a later turn
    model_server.script(RISKY, Reply.answer("again"))
    fleet.post("/webhooks/telegram", json=payloads.tg_private_text(30010), headers=TELEGRAM_HEADERS)
    drain(runtime)
    # Then no new request was posted and the turn finished
    assert [c.params["text"] for c in telegram_api.calls_to("sendMessage")[asked:]] == ["again"]
    assert telegram_api.messages[-1]["text"] == "again"


@pytest.fixture
def typed_answers(fleet: TestClient, runtime: Runtime, registry: FunctionRegistry) -> None:
    """The fleet with `approval-by-text` too (workers load it with the agent)."""
    registry.register(approval_by_text)
    runtime.register_functions()


@pytest.mark.usefixtures("typed_answers")
def test_typed_yes_answers_the_pending_request(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a waiting request
    run_id = _ask(fleet, runtime, model_server, Reply.answer("written"))
    # When Alice types "Yes!" in the chat instead of pressing a button
    update = payloads.tg_private_text(30003, text="Yes!")
    assert (
        fleet.post("/webhooks/telegram", json=update, headers=TELEGRAM_HEADERS).status_code == 200
    )
    drain(runtime)
    # Then the call ran and the turn finished
    assert (tmp_path / "workspace" / "functions" / "hello.py").exists()
    assert run_status(runtime, run_id) == "completed"


@pytest.mark.usefixtures("typed_answers")
def test_typed_question_leaves_the_request_pending(
    fleet: TestClient, runtime: Runtime, model_server: ModelServer, telegram_api: FakeTelegramApi
) -> None:
    # Given a waiting request
    run_id = _ask(fleet, runtime, model_server, Reply.answer("written"))
    # When Alice types something that is not a yes or a no
    update = payloads.tg_private_text(30003, text="yes, but what does it do?")
    fleet.post("/webhooks/telegram", json=update, headers=TELEGRAM_HEADERS)
    drain(runtime)
    # Then the request is still waiting for an answer (the model answered the question)
    assert run_status(runtime, run_id) == "waiting"
    assert telegram_api.callback_answers == []


def test_sub_agent_asks_in_its_parents_chat(
    fleet: TestClient,
    runtime: Runtime,
    registry: FunctionRegistry,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given sub-agents, and a parent that delegates a task whose sub-agent writes in functions/
    registry.register(run_subagent)
    runtime.register_functions()
    _ask_with(
        fleet,
        runtime,
        model_server,
        Reply.tool("delegate_task", {"task": "write the job"}),
        RISKY,  # the sub-agent
        Reply.answer("sub-agent: written"),
        Reply.answer("Your job is written."),
    )
    # When Alice approves the request posted in her chat
    telegram_press(fleet, telegram_api, "a", 30002)
    drain(runtime)
    # Then the sub-agent's write ran and the parent answered
    assert (tmp_path / "workspace" / "functions" / "hello.py").exists()
    assert telegram_api.messages[-1]["text"] == "Your job is written."
