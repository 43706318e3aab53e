"""Steer mode while a request waits, through the real Telegram and Slack webhooks: a plain
yes or no (any case, the obvious variants) answers it; anything else reaches the model at once,
the request still standing, and a later press still counts."""

# ruff: noqa: F811  (`fleet` is the webhook fleet fixture of test_e2e_turn, used by name)

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from harness.agent.approvals.text import approval_by_text
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.channels import payloads
from tests.channels.approval_presses import (
    run_status,
    slack_mention,
    slack_request,
    slack_signed,
    telegram_press,
    telegram_request,
    write_in_private,
)
from tests.channels.test_e2e_turn import fleet  # noqa: F401
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi

WRITE = Reply.tool("write", {"path": "functions/s.py", "content": "s = 1\n"})


@pytest.fixture(autouse=True)
def typed_answers(fleet: TestClient, runtime: Runtime, registry: FunctionRegistry) -> None:
    """`approval-by-text` too, as workers load it: it and the waiting run both see a typed
    answer, and whichever records it first, the outcome is the same."""
    registry.register(approval_by_text)
    runtime.register_functions()


def _last_request_text(model: ModelServer) -> str:
    """Everything the model was sent in its latest request, as JSON text."""
    return json.dumps(model.requests[-1].body.get("messages", []))


def test_steer_other_message_reaches_the_model_and_the_request_still_stands(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a turn waiting for Alice's approval of a write
    model_server.script(
        WRITE, Reply.answer("It creates functions/s.py."), Reply.answer("Done: written.")
    )
    run_id = write_in_private(fleet, runtime, 60001, "write the job")
    assert len(model_server.requests) == 1
    # When she asks a question instead of answering
    write_in_private(fleet, runtime, 60002, "What does it do exactly?")
    # Then the model saw her question (and that the call has not run) and its answer was sent
    assert len(model_server.requests) == 2
    seen = _last_request_text(model_server)
    assert "What does it do exactly?" in seen and "Not run yet" in seen, seen
    assert telegram_api.messages[-1]["text"] == "It creates functions/s.py."
    # And the request still stands: the run waits, nothing was written, the buttons remain
    assert run_status(runtime, run_id) == "waiting"
    assert not (tmp_path / "workspace" / "functions" / "s.py").exists()
    assert "reply_markup" in telegram_request(telegram_api)
    # When she then presses Approve
    telegram_press(fleet, telegram_api, "a", 60003)
    drain(runtime)
    # Then the call ran, the model was told so, and the turn finished with its answer
    assert (tmp_path / "workspace" / "functions" / "s.py").read_text() == "s = 1\n"
    assert "Approved, and it ran" in _last_request_text(model_server)
    assert telegram_api.messages[-1]["text"] == "Done: written."
    assert run_status(runtime, run_id) == "completed"


@pytest.mark.parametrize(
    ("typed", "runs"),
    [("yes", True), ("Y", True), ("APPROVE!", True), ("no", False), ("Deny.", False)],
)
def test_steer_plain_yes_or_no_answers_the_request(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
    typed: str,
    runs: bool,
) -> None:
    # Given a turn waiting for Alice's approval of a write
    model_server.script(WRITE, Reply.answer("ok"))
    run_id = write_in_private(fleet, runtime, 60011, "write the job")
    # When she types a plain answer instead of pressing a button
    write_in_private(fleet, runtime, 60012, typed)
    # Then it counted as her decision: the call ran (or not), the turn finished
    assert (tmp_path / "workspace" / "functions" / "s.py").exists() is runs
    assert run_status(runtime, run_id) == "completed"
    # And the request shows the decision and who made it, without buttons
    request = telegram_request(telegram_api)
    shown = "Approved by Alice" if runs else "Denied by Alice"
    assert shown in request["text"] and "reply_markup" not in request, request
    # And the model was told of a refusal when she said no
    assert ("denied this write call" in _last_request_text(model_server)) is not runs


def test_steer_slack_thread_reply_no_denies_the_request(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    slack_api: FakeSlackApi,
    tmp_path: Path,
) -> None:
    # Given a request in the thread of Ada's mention in #general
    model_server.script(WRITE, Reply.answer("Understood, not writing it."))
    slack_mention(fleet)
    drain(runtime)
    assert "blocks" in slack_request(slack_api)
    # When she replies "No" in the thread instead of pressing a button
    body = json.dumps(payloads.slack_thread_reply(text="No")).encode()
    headers = {**slack_signed(body), "Content-Type": "application/json"}
    assert fleet.post("/webhooks/slack", content=body, headers=headers).status_code == 200
    drain(runtime)
    # Then nothing was written, the model was told she denied it, and the request says so
    assert not (tmp_path / "workspace" / "functions" / "s.py").exists()
    assert "denied this write call" in _last_request_text(model_server)
    request = slack_request(slack_api)
    assert "Denied by" in request["text"] and "blocks" not in request, request
    assert slack_api.messages[-1]["text"] == "Understood, not writing it."
