"""Chat commands answered beside the chat's turn: no model call, nothing in the transcript,
after the DM_POLICY gate; `/stop` stops the running turn, `/pair` is the owner's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

import pytest

from harness.addresses import CAN_ANSWER_META
from harness.agent.chat_commands.handler import NOT_OWNER, SHARED_NOTES_KEPT, chat_command
from harness.agent.delegation import SUBAGENT_FUNCTION
from harness.agent.memory.notes import log_path
from harness.events import MESSAGE_HANDLER, MESSAGE_RECEIVED
from harness.llm import price_overrides
from harness.records.pairing import RedisAccessStore
from harness.records.stores import redis_records
from harness.runtime import publish, run_id_for
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from harness.tools.base import Tool, ToolContext, ToolParams
from tests.agent.conftest import AgentRig
from tests.agent.roster.test_named_delegation import write_agent
from tests.fakes.model_match import opened_with
from tests.fakes.model_server import Reply

OWNER_META = {
    "access": {
        "subjects": ["telegram:chat:7", "telegram:user:7"],
        "pairing_subject": "telegram:user:7",
        "label": "Ana",
        "allowlisted": True,
    },
    CAN_ANSWER_META: True,
}
EVE_META = {
    "access": {
        "subjects": ["telegram:chat:42", "telegram:user:42"],
        "pairing_subject": "telegram:user:42",
        "label": "Eve",
    }
}


@pytest.fixture
def rig(agent: AgentRig, registry: FunctionRegistry) -> Iterator[AgentRig]:
    registry.register(chat_command)
    agent.runtime.register_functions()
    yield agent


def _say(
    rig: AgentRig, text: str, *, session: str = "chat-1", meta: dict[str, Any] | None = None
) -> str:
    """Publish a message in `session` and drain; returns the event id."""
    data: dict[str, Any] = {
        "message": text,
        "session_key": session,
        "channel": "test",
        "sender": {"id": "u1", "name": "Ana"},
        "destination": {"chat_id": session},
    }
    if meta is not None:
        data["channel_meta"] = meta
    result = publish({"name": MESSAGE_RECEIVED, "data": data}, runtime=rig.runtime)
    drain(rig.runtime)
    return result.event_id


def test_chat_command_new_starts_a_fresh_session_and_keeps_the_old(rig: AgentRig) -> None:
    # Given a conversation of one exchange
    rig.model.script(Reply.answer("Hi Ana."))
    _say(rig, "hello")
    assert len(rig.session_lines()) == 2
    # When the user sends /new
    _say(rig, "/new")
    # Then the session is empty, the old one is archived, and no model was called for it
    assert rig.session_lines() == []
    archived = list(rig.deps.sessions.archive_dir.glob("*.jsonl"))
    assert len(archived) == 1 and "Hi Ana." in archived[0].read_text()
    assert len(rig.model.requests) == 1
    assert rig.replies()[-1].startswith("New conversation started.")


def test_chat_command_status_answers_without_the_model_or_the_transcript(rig: AgentRig) -> None:
    # Given a conversation and a day's recorded usage of a priced model in this chat
    rig.model.script(Reply.answer("Hi."))
    _say(rig, "hello")
    calls = len(rig.model.requests)
    # When the user asks /status
    asked = _say(rig, "/status")
    # Then the answer names the model and the size, and neither model nor transcript saw it
    status = rig.replies()[-1]
    assert "model " in status and "Conversation: 2 messages" in status, status
    assert "Running: nothing" in status, status
    assert len(rig.model.requests) == calls
    assert len(rig.session_lines()) == 2
    # And the chat's turn never ran for it
    assert rig.runtime.ledger.run(run_id_for(MESSAGE_HANDLER, asked)) is None


def test_chat_command_usage_reports_the_chat_today(rig: AgentRig) -> None:
    # Given usage recorded today in this chat and another, on a model priced $3/$9 per M
    usage = redis_records(rig.runtime).usage
    now = rig.runtime.now_ms()
    try:
        price_overrides.apply(json.dumps({"test-model": {"input": 3.0, "output": 9.0}}))
        usage.add(now, {"model": "test-model", "in": 1000, "out": 500}, session="chat-1",
                  function=MESSAGE_HANDLER)  # fmt: skip
        usage.add(now, {"model": "test-model", "in": 1000}, session="chat-2", function="f")
        # When the owner asks /usage at their own entry point (no asker)
        _say(rig, "/usage")
    finally:
        price_overrides.apply("")
    # Then this chat's tokens and cost today and this week are reported, and the fleet's
    answer = rig.replies()[-1]
    assert "This chat today: 1,500 tokens, $0.0075 (1 model calls)" in answer, answer
    assert "This chat, last 7 days: 1,500 tokens" in answer, answer
    assert "All chats today: 2,500 tokens, $0.0105" in answer, answer


def test_chat_command_from_a_stranger_gets_the_pairing_code_only(rig: AgentRig) -> None:
    # When a stranger sends /status
    _say(rig, "/status", session="telegram-42", meta=EVE_META)
    # Then the one reply is the pairing code
    (reply,) = rig.replies()
    assert "harness pair approve" in reply and "Conversation" not in reply, reply


def test_chat_command_pair_is_refused_to_someone_but_the_owner(rig: AgentRig) -> None:
    # Given Ana paired first (the owner), then Bob
    pairing = RedisAccessStore(rig.runtime)
    pairing.grant("telegram:user:7", "Ana", "test")
    pairing.grant("telegram:user:9", "Bob", "test")
    pairing.request("telegram:user:42", "Eve", "telegram")
    bob = {"access": {"subjects": ["telegram:user:9"], "pairing_subject": "telegram:user:9"}}
    # When Bob asks /pair, then Ana
    _say(rig, "/pair", session="telegram-9", meta=bob)
    _say(rig, "/pair", session="telegram-7", meta=OWNER_META)
    # Then Bob is refused and Ana sees the pending code and both approved people
    refused, listed = rig.replies()
    assert refused == NOT_OWNER
    assert "Eve" in listed and "telegram:user:9" in listed, listed


def test_chat_command_unknown_gets_the_list(rig: AgentRig) -> None:
    _say(rig, "/frobnicate now")
    assert "/new" in rig.replies()[-1] and "/stop" in rig.replies()[-1]
    assert rig.model.requests == []


class Risky(Tool[ToolParams]):
    """Acts on the world: every call asks for approval."""

    name = "risky_tool"
    description = "Acts."
    parameters = ToolParams
    risky = True

    def run(self, params: ToolParams, ctx: ToolContext) -> str:
        return "done"


def test_chat_command_stop_cancels_the_turn_waiting_on_an_approval(rig: AgentRig) -> None:
    # Given a turn waiting for the approval of a risky call
    rig.deps.tools.register(Risky())
    rig.model.script(Reply.tool("risky_tool", {}), Reply.answer("Did it."))
    turn = run_id_for(MESSAGE_HANDLER, _say(rig, "act", meta={CAN_ANSWER_META: True}))
    record = rig.runtime.ledger.run(turn)
    assert record is not None and record.status == "waiting", record
    # When the user sends /stop in the same chat
    _say(rig, "/stop", meta={CAN_ANSWER_META: True})
    # Then the turn is cancelled, the model was called once only, and the user is told
    record = rig.runtime.ledger.run(turn)
    assert record is not None and record.status == "cancelled", record
    assert len(rig.model.requests) == 1
    assert "Stopping." in rig.replies()


def test_chat_command_stop_cancels_the_chats_background_task_and_names_it(
    rig: AgentRig,
) -> None:
    # Given a turn that started a researcher in the background and ended, the researcher
    # still running (waiting on the approval of a write in functions/)
    write_agent(rig.workspace, "researcher", "description: Finds sources.")
    rig.model.script(
        Reply.tool("delegate_to_researcher", {"task": "find tea", "background": True}),
        Reply.answer("Started."),
    )
    rig.model.script_for(
        opened_with("find tea"),
        Reply.tool("write", {"path": "functions/job.py", "content": "job = 1\n"}),
    )
    turn = run_id_for(MESSAGE_HANDLER, _say(rig, "research tea", meta={CAN_ANSWER_META: True}))
    task = run_id_for(SUBAGENT_FUNCTION, f"{turn}:delegate:0")
    assert _status(rig, turn) == "completed" and _status(rig, task) == "waiting"
    # When the user sends /stop in the chat
    _say(rig, "/stop", meta={CAN_ANSWER_META: True})
    # Then the background task is cancelled, and the answer says what was stopped
    assert _status(rig, task) == "cancelled"
    assert rig.replies()[-1] == f"Stopping 1 background task: researcher (run {task[:8]}).", (
        rig.replies()[-1]
    )


def _status(rig: AgentRig, run_id: str) -> str:
    record = rig.runtime.ledger.run(run_id)
    assert record is not None, f"run {run_id} is unknown"
    return record.status


def test_chat_command_reset_sets_todays_notes_aside(rig: AgentRig) -> None:
    # Given today's working notes
    today = log_path(rig.workspace, _today(rig))
    today.parent.mkdir(parents=True, exist_ok=True)
    today.write_text("# today\n\n### 09:00:00\nAna likes tea.\n")
    # When the user sends /reset
    _say(rig, "/reset")
    # Then today's log is gone from where the prompt reads it, and kept aside
    assert not today.exists()
    (aside,) = (today.parent / "cleared").glob("*.md")
    assert "Ana likes tea." in aside.read_text()
    assert "working notes are cleared" in rig.replies()[-1]


def test_chat_command_reset_by_someone_but_the_owner_keeps_shared_notes(rig: AgentRig) -> None:
    # Given Ana paired first (the owner), Bob after her, the memory shared (the default), and
    # today's working notes
    pairing = RedisAccessStore(rig.runtime)
    pairing.grant("telegram:user:7", "Ana", "test")
    pairing.grant("telegram:user:9", "Bob", "test")
    bob = {"access": {"subjects": ["telegram:user:9"], "pairing_subject": "telegram:user:9"}}
    today = log_path(rig.workspace, _today(rig))
    today.parent.mkdir(parents=True, exist_ok=True)
    today.write_text("# today\n\n### 09:00:00\nAna likes tea.\n")
    rig.model.script(Reply.answer("Hi Bob."))
    _say(rig, "hello", session="telegram-9", meta=bob)
    # When Bob sends /reset in his chat
    _say(rig, "/reset", session="telegram-9", meta=bob)
    # Then his conversation starts afresh, but the notes stay, and he is told why
    assert "Ana likes tea." in today.read_text()
    assert rig.deps.sessions.count("telegram-9") == 0
    assert rig.replies()[-1] == SHARED_NOTES_KEPT
    # When the owner sends /reset, Then the notes are set aside
    _say(rig, "/reset", session="telegram-7", meta=OWNER_META)
    assert not today.exists()


def _today(rig: AgentRig) -> date:
    return datetime.fromtimestamp(rig.runtime.now_ms() / 1000, UTC).date()
