"""A budget crossed mid-conversation on Telegram: the chat is warned once, the turn stops at
100%, the owner is asked once in their chat to raise it for the day, and their press lets
the conversation go on (`harness.agent.budget_raise`)."""

# ruff: noqa: F811  (`fleet` and `priced` are fixtures of other test modules, used by name)

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from harness.agent.budget_raise import ask_to_raise
from harness.agent.deps import build_deps, set_agent_deps
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.agent.conftest import make_settings
from tests.agent.test_budgets import CALL, MODEL, priced  # noqa: F401
from tests.channels import payloads
from tests.channels.approval_presses import telegram_press, write_in_private
from tests.channels.test_e2e_turn import fleet  # noqa: F401
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi

ALICE_ID = payloads.ALICE["id"]


@pytest.fixture
def budgeted(
    fleet: TestClient,
    runtime: Runtime,
    registry: FunctionRegistry,
    model_server: ModelServer,
    tmp_path: Path,
    priced: None,
) -> TestClient:
    """The fleet with the raise function, Alice as the owner, a $5.00 daily budget per chat
    and $1.00 per scripted model call."""
    registry.register(ask_to_raise)
    runtime.register_functions()
    settings = make_settings(
        tmp_path / "workspace", model_server, stream_replies=False, agent_model=MODEL,
        agent_owner=f"telegram:user:{ALICE_ID}", agent_approval_timeout="3600s",
        budget_daily_usd_per_chat=5.0,
    )  # fmt: skip
    set_agent_deps(build_deps(settings))
    (tmp_path / "workspace" / "note.md").write_text("hi\n")
    return fleet


def _texts(telegram_api: FakeTelegramApi) -> list[str]:
    return [str(m.get("text", "")) for m in telegram_api.messages]


def _asked(telegram_api: FakeTelegramApi) -> list[str]:
    return [
        str(c.params["text"])
        for c in telegram_api.calls_to("sendMessage")
        if "reply_markup" in c.params and str(c.params["chat_id"]) == str(ALICE_ID)
    ]


def test_budget_crossed_mid_conversation_warns_stops_asks_the_owner_and_goes_on_after_a_press(
    budgeted: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a first turn that spent $1.00 of the chat's $5.00
    model_server.script(Reply.answer("First.", **CALL))
    write_in_private(budgeted, runtime, 20001, "one")
    read = Reply.tool("read", {"path": "note.md"}, **CALL)
    # When the next turn's model calls pass 80% ($4.00), then reach 100% ($5.00)
    model_server.script(read, read, read, read)  # a fifth call would find no scripted reply
    write_in_private(budgeted, runtime, 20002, "two")
    # Then the chat was warned once, and the turn stopped before another model call
    assert len(model_server.requests) == 5, "no model call at 100%"
    texts = _texts(telegram_api)
    assert len([t for t in texts if t.startswith("Heads up")]) == 1, texts
    assert any("is used up" in t for t in texts), texts
    # And the owner (Alice) was asked in her chat, with buttons, to raise it by the same again
    (question,) = _asked(telegram_api)
    assert "for today" in question and "by $5.00 (the same amount again)" in question, question

    # When a later message stops again the same day, Then the owner is not asked twice
    write_in_private(budgeted, runtime, 20003, "three")
    assert len(model_server.requests) == 5 and len(_asked(telegram_api)) == 1

    # When Alice presses Approve
    telegram_press(budgeted, telegram_api, "a", 20004)
    drain(runtime)
    # Then the chat is told it may go on, and the next message is answered by the model
    assert any("The owner raised today's budget by $5.00" in t for t in _texts(telegram_api))
    model_server.script(Reply.answer("Back again.", **CALL))
    write_in_private(budgeted, runtime, 20005, "four")
    assert _texts(telegram_api)[-1] == "Back again."
    assert len(model_server.requests) == 6


def test_budget_raise_denied_by_the_owner_changes_nothing(
    budgeted: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a chat whose budget is used up, the owner asked
    model_server.script(*[Reply.tool("read", {"path": "note.md"}, **CALL)] * 5)
    write_in_private(budgeted, runtime, 20011, "go")
    assert len(_asked(telegram_api)) == 1
    # When Alice presses Deny
    telegram_press(budgeted, telegram_api, "d", 20012)
    drain(runtime)
    # Then the next message still stops with no model call, and nothing says it was raised
    write_in_private(budgeted, runtime, 20013, "again")
    assert len(model_server.requests) == 5
    assert "is used up" in _texts(telegram_api)[-1]
    assert not any("raised" in t for t in _texts(telegram_api))
