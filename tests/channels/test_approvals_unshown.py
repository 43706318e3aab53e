"""A request the chat refuses to show (the chat is gone, the bot was removed, the platform
keeps failing): the run is answered at once as unattended (`AGENT_APPROVAL_UNATTENDED`), not
left waiting out `AGENT_APPROVAL_TIMEOUT` for a button no one sees."""

# ruff: noqa: F811  (`fleet` is the webhook fleet fixture of test_e2e_turn, used by name)

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from harness.agent.approvals.lines import UNSHOWN_BY
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import HANDLE_MESSAGE
from harness.records.approvals import RedisApprovalStore
from harness.runtime import Runtime, run_id_for
from harness.runtime.testing import drain
from tests.agent.conftest import make_settings
from tests.channels import payloads
from tests.channels.approval_presses import run_status, slack_signed, write_in_private
from tests.channels.test_e2e_turn import fleet  # noqa: F401
from tests.fakes.model_server import ModelServer, Reply, anthropic_tool_results
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi
from tests.runtime_fixtures import ManualClock

RISKY = Reply.tool("write", {"path": "functions/hello.py", "content": "print('hi')\n"})
LONG_TIMEOUT = "3600s"  # far longer than anything these tests let pass on the clock


def _unattended(tmp_path: Path, model: ModelServer, unattended: str) -> None:
    """The fleet's agent with a long approval timeout and `AGENT_APPROVAL_UNATTENDED`."""
    settings = make_settings(
        tmp_path / "workspace",
        model,
        stream_replies=False,
        agent_approval_timeout=LONG_TIMEOUT,
        agent_approval_unattended=unattended,
    )
    set_agent_deps(build_deps(settings))


def _tool_results(model: ModelServer) -> list[str]:
    """Every tool_result content the model was sent, in order."""
    return [
        json.dumps(block.get("content"))
        for request in model.requests
        for block in anthropic_tool_results(request.body)
    ]


def _answers(runtime: Runtime, run_id: str) -> list[dict[str, Any]]:
    """The answers the run's approval waits recorded in its journal."""
    return [
        record["v"]["data"]
        for key, record in runtime.ledger.journal(run_id).items()
        if key.startswith("approval:") and record.get("v")
    ]


def _refuse_requests_for_good(telegram_api: FakeTelegramApi) -> None:
    """Telegram answers the request's sendMessage as it does for a chat that is gone."""
    telegram_api.fail_next(
        status=400, description="Bad Request: chat not found", method="sendMessage"
    )


def test_request_the_chat_refuses_is_denied_at_once_and_the_model_told(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a one-hour approval timeout, AGENT_APPROVAL_UNATTENDED=deny (the default), and
    # Telegram refusing the request's message for good
    _unattended(tmp_path, model_server, "deny")
    _refuse_requests_for_good(telegram_api)
    # When the model wants a risky write in Alice's chat (and no time passes on the clock)
    model_server.script(RISKY, Reply.answer("I could not ask you."))
    run_id = write_in_private(fleet, runtime, 50001, "Hello there")
    # Then the turn finished rather than waiting for the timeout, without writing the file
    assert run_status(runtime, run_id) == "completed"
    assert not (tmp_path / "workspace" / "functions" / "hello.py").exists()
    # And the model was told the request could not be shown and unattended runs are denied
    (result,) = _tool_results(model_server)
    assert "could not be shown" in result and "AGENT_APPROVAL_UNATTENDED=deny" in result, result
    # And the run recorded what decided
    assert [(a["decision"], a["by"]) for a in _answers(runtime, run_id)] == [("deny", UNSHOWN_BY)]


def test_a_late_answer_does_not_change_a_request_decided_for_nobody(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a request denied because the chat refused to show it
    _unattended(tmp_path, model_server, "deny")
    _refuse_requests_for_good(telegram_api)
    model_server.script(RISKY, Reply.answer("I could not ask you."))
    run_id = write_in_private(fleet, runtime, 50011, "Hello there")
    store = RedisApprovalStore(runtime)
    approval_id = store.of_run(run_id)
    assert approval_id is not None, "the run opened no request"
    # When Alice's approval arrives afterwards (through the same first-answer-wins record)
    claim = store.decide(approval_id, "approve", f"telegram:user:{payloads.ALICE['id']}", "Alice")
    # Then it is told the request was already answered, by nobody, and nothing was written
    assert (claim.outcome, claim.state, claim.by) == ("answered", "deny", UNSHOWN_BY)
    assert not (tmp_path / "workspace" / "functions" / "hello.py").exists()


def test_request_the_chat_refuses_runs_the_tool_when_unattended_runs_are_allowed(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given AGENT_APPROVAL_UNATTENDED=allow, a one-hour timeout, and the chat refusing requests
    _unattended(tmp_path, model_server, "allow")
    _refuse_requests_for_good(telegram_api)
    # When the model wants a risky write
    model_server.script(RISKY, Reply.answer("written"))
    run_id = write_in_private(fleet, runtime, 50021, "Hello there")
    # Then the write ran, the turn finished, and the run recorded what allowed it
    assert (tmp_path / "workspace" / "functions" / "hello.py").read_text() == "print('hi')\n"
    assert run_status(runtime, run_id) == "completed"
    assert [(a["decision"], a["by"]) for a in _answers(runtime, run_id)] == [
        ("approve", UNSHOWN_BY)
    ]


def test_request_whose_post_keeps_failing_is_denied_once_retries_are_spent(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
    clock: ManualClock,
) -> None:
    # Given a one-hour timeout and Telegram failing every sendMessage with a server error
    _unattended(tmp_path, model_server, "deny")
    telegram_api.fail_at_random(1.0, status=500, method="sendMessage")
    # When the model wants a risky write, and a few minutes pass for the post's retries
    model_server.script(RISKY, Reply.answer("I could not ask you."))
    run_id = write_in_private(fleet, runtime, 50031, "Hello there")
    for _ in range(10):
        if run_status(runtime, run_id) != "waiting":
            break
        clock.advance(60)
        drain(runtime)
    # Then the turn finished long before the timeout, the model told the request went unshown
    assert run_status(runtime, run_id) == "completed"
    (result,) = _tool_results(model_server)
    assert "could not be shown" in result, result
    assert not (tmp_path / "workspace" / "functions" / "hello.py").exists()


def test_slack_request_in_a_channel_that_is_gone_is_denied_at_once(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    slack_api: FakeSlackApi,
    tmp_path: Path,
) -> None:
    # Given a one-hour timeout, and Slack answering chat.postMessage with channel_not_found
    _unattended(tmp_path, model_server, "deny")
    slack_api.fail_next(status=200, error="channel_not_found", method="chat.postMessage")
    # When Ada mentions the bot and the model wants a risky write
    model_server.script(
        Reply.tool("write", {"path": "functions/s.py", "content": "s = 1\n"}),
        Reply.answer("I could not ask you."),
    )
    body = json.dumps(payloads.slack_app_mention()).encode()
    headers = {**slack_signed(body), "Content-Type": "application/json"}
    response = fleet.post("/webhooks/slack", content=body, headers=headers)
    assert response.status_code == 200, response.text
    drain(runtime)
    # Then the turn finished with the call refused, and the model was told why
    run_id = run_id_for(HANDLE_MESSAGE, response.json()["event_id"])
    assert run_status(runtime, run_id) == "completed"
    (result,) = _tool_results(model_server)
    assert "could not be shown" in result, result
    assert not (tmp_path / "workspace" / "functions" / "s.py").exists()


@pytest.mark.parametrize("unattended", ["deny", "allow"])
def test_a_request_that_was_shown_still_waits_for_its_answer(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
    unattended: str,
) -> None:
    # Given a chat that shows the request, whatever AGENT_APPROVAL_UNATTENDED says
    _unattended(tmp_path, model_server, unattended)
    # When the model wants a risky write
    model_server.script(RISKY, Reply.answer("written"))
    run_id = write_in_private(fleet, runtime, 50041, "Hello there")
    # Then the run waits for a person, and nothing was decided for nobody
    assert run_status(runtime, run_id) == "waiting"
    assert _answers(runtime, run_id) == []
