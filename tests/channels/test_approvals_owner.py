"""A scheduled (system) turn nobody can answer in asks the owner (`AGENT_APPROVAL_UNATTENDED=ask`,
the default): the request reaches the owner's private chat on Telegram with buttons, the run
waits durably, and only the owner's press counts."""

# ruff: noqa: F811  (`fleet` is the webhook fleet fixture of test_e2e_turn, used by name)

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import HANDLE_MESSAGE
from harness.events import MESSAGE_RECEIVED
from harness.records.approvals import RedisApprovalStore
from harness.runtime import Runtime, publish, run_id_for
from harness.runtime.testing import drain
from harness.tools.base import Tool, ToolContext, ToolParams
from tests.agent.conftest import make_settings
from tests.channels import payloads
from tests.channels.approval_presses import MALLORY, run_status, telegram_press
from tests.channels.test_e2e_turn import fleet  # noqa: F401
from tests.fakes.model_server import ModelServer, Reply, anthropic_tool_results
from tests.fakes.telegram_api import FakeTelegramApi

ALICE_ID = payloads.ALICE["id"]
OWNER = f"telegram:user:{ALICE_ID}"


class RiskyCounter(Tool[ToolParams]):
    """A risky tool (like an MCP tool of a server not marked safe) that counts its runs."""

    name = "deploy"
    description = "Deploys."
    parameters = ToolParams
    risky = True

    def __init__(self) -> None:
        self.calls = 0

    def run(self, params: ToolParams, ctx: ToolContext) -> str:
        self.calls += 1
        return "deployed"


def _owner_is(tmp_path: Path, model: ModelServer, owner: str, **settings: Any) -> RiskyCounter:
    """The fleet's agent with `AGENT_OWNER=owner` and the counting risky tool."""
    deps = build_deps(
        make_settings(
            tmp_path / "workspace",
            model,
            stream_replies=False,
            agent_owner=owner,
            agent_approval_timeout="3600s",
            **settings,
        )
    )
    tool = RiskyCounter()
    deps.tools.register(tool)
    set_agent_deps(deps)
    return tool


def _scheduled_turn(runtime: Runtime, model: ModelServer) -> str:
    """A cron-started turn (a `system` session) whose model calls the risky tool, then
    answers; the fleet runs until it waits or ends. Returns its run id."""
    model.script(Reply.tool("deploy", {}), Reply.answer("Deployed."))
    result = publish(
        {
            "name": MESSAGE_RECEIVED,
            "data": {
                "message": "nightly deploy",
                "session_key": "system-nightly",
                "channel": "test",
                "sender": {"id": "system", "name": "nightly"},
                "destination": {"chat_id": "system-nightly"},
            },
        },
        runtime=runtime,
    )
    drain(runtime)
    return run_id_for(HANDLE_MESSAGE, result.event_id)


def _requests_to(telegram_api: FakeTelegramApi, chat_id: object) -> list[dict[str, Any]]:
    """The sendMessage calls with buttons to `chat_id`."""
    return [
        c.params
        for c in telegram_api.calls_to("sendMessage")
        if "reply_markup" in c.params and str(c.params["chat_id"]) == str(chat_id)
    ]


def _tool_results(model: ModelServer) -> list[str]:
    return [
        json.dumps(block.get("content"))
        for request in model.requests
        for block in anthropic_tool_results(request.body)
    ]


def test_scheduled_turn_asks_the_owner_in_their_chat_with_buttons(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given AGENT_OWNER is Alice on Telegram, and the default AGENT_APPROVAL_UNATTENDED (ask)
    tool = _owner_is(tmp_path, model_server, OWNER)
    # When a scheduled turn calls a risky tool
    run_id = _scheduled_turn(runtime, model_server)
    # Then the request went to Alice's private chat, with buttons, saying which run asks
    (request,) = _requests_to(telegram_api, ALICE_ID)
    assert "deploy" in request["text"] and run_id in request["text"], request["text"]
    assert "system-nightly" in request["text"], request["text"]
    assert request["reply_markup"]["inline_keyboard"], request
    # And the run waits, the tool not run yet
    assert run_status(runtime, run_id) == "waiting"
    assert tool.calls == 0


def test_owner_press_lets_the_scheduled_turn_continue_and_the_tool_runs_once(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a scheduled turn waiting for the owner (Alice)
    tool = _owner_is(tmp_path, model_server, OWNER)
    run_id = _scheduled_turn(runtime, model_server)
    # When Alice presses Approve
    telegram_press(fleet, telegram_api, "a", 70001)
    drain(runtime)
    # Then the tool ran once, the model got its result, and the turn finished
    assert tool.calls == 1
    assert ["deployed" in r for r in _tool_results(model_server)] == [True]
    assert run_status(runtime, run_id) == "completed"


def test_owner_allowing_for_the_session_approves_the_call_and_grants_nothing(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a scheduled turn waiting for the owner (Alice)
    tool = _owner_is(tmp_path, model_server, OWNER)
    run_id = _scheduled_turn(runtime, model_server)
    # When Alice presses "Allow for this session"
    telegram_press(fleet, telegram_api, "s", 70003)
    drain(runtime)
    # Then this call ran, but the scheduled session holds no grant for later runs
    assert tool.calls == 1 and run_status(runtime, run_id) == "completed"
    assert RedisApprovalStore(runtime).grants("system-nightly", ["owner", OWNER]) == []


def test_press_by_someone_else_than_the_owner_is_refused(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a scheduled turn waiting for the owner (Alice)
    tool = _owner_is(tmp_path, model_server, OWNER)
    run_id = _scheduled_turn(runtime, model_server)
    # When Mallory presses Approve on the request
    telegram_press(fleet, telegram_api, "a", 70002, user=MALLORY)
    drain(runtime)
    # Then she is told she may not answer, nothing ran, and the run still waits
    assert telegram_api.callback_answers[-1]["text"].startswith("Only the person who asked")
    assert tool.calls == 0
    assert run_status(runtime, run_id) == "waiting"


def test_typed_yes_in_the_scheduled_session_naming_the_owner_does_not_answer(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given a scheduled turn waiting for the owner (Alice), whose model answers what arrives
    tool = _owner_is(tmp_path, model_server, OWNER)
    run_id = _scheduled_turn(runtime, model_server)
    model_server.script(Reply.answer("Still waiting."), Reply.answer("Still waiting."))
    # When a "yes" arrives in the scheduled turn's own session, naming Alice as its sender
    publish(
        {
            "name": MESSAGE_RECEIVED,
            "data": {
                "message": "yes",
                "session_key": "system-nightly",
                "channel": "telegram",
                "sender": {"id": str(ALICE_ID), "name": "Alice"},
                "destination": {"chat_id": "system-nightly"},
            },
        },
        runtime=runtime,
    )
    drain(runtime)
    # Then it answered nothing: the tool did not run and the request still waits for her press
    assert tool.calls == 0
    assert run_status(runtime, run_id) == "waiting"


def test_owner_on_a_channel_not_configured_is_denied_at_once_with_the_reason(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given an owner on a channel this fleet does not run
    tool = _owner_is(tmp_path, model_server, "discord:user:99")
    # When a scheduled turn calls a risky tool
    run_id = _scheduled_turn(runtime, model_server)
    # Then nothing was posted, the call was refused at once saying why, and the turn finished
    assert not [c for c in telegram_api.calls_to("sendMessage") if "reply_markup" in c.params]
    assert tool.calls == 0
    (result,) = _tool_results(model_server)
    assert "owner's channel is not configured" in result and "AGENT_OWNER" in result, result
    assert run_status(runtime, run_id) == "completed"
