"""What the agent sends into a chat outside the chat's turn joins the chat's transcript
(`harness.agent.proactive`): the next turn's model request holds it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.proactive import chat_session_key, keep_proactive
from harness.agent.session import SessionLine, messages_of
from harness.events import MESSAGE_RECEIVED, REPLY_READY, Destination, ReplyTarget
from harness.llm.types import Message, ToolCall, ToolResult
from harness.runtime import publish
from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply
from tests.runtime_fixtures import ManualClock


@pytest.fixture
def unguarded(agent: AgentRig) -> AgentRig:
    """AGENT_APPROVAL=off: a scheduled delegation would otherwise ask first."""
    set_agent_deps(build_deps(make_settings(agent.workspace, agent.model, agent_approval="off")))
    return agent


def _assistant_texts(body: dict[str, Any]) -> list[str]:
    """The text blocks of the assistant messages of an Anthropic request body."""
    return [
        str(block.get("text", ""))
        for message in body["messages"]
        if message["role"] == "assistant"
        for block in message["content"]
    ]


def _proactive(agent: AgentRig, session: str = "chat-1") -> list[dict[str, Any]]:
    return [line for line in agent.session_lines(session) if line.get("proactive")]


def test_async_sub_agents_answer_is_in_the_next_turns_transcript(agent: AgentRig) -> None:
    # Given a turn that delegated in the background, and the sub-agent's answer sent later
    agent.model.script(
        Reply.tool("delegate_async_task", {"task": "research tea"}),
        Reply.answer("I started the research."),
        Reply.answer("Tea is great."),  # the sub-agent
        Reply.answer("Glad you liked it."),
    )
    agent.say("research tea in the background")
    # When the person writes again
    agent.say("thanks")
    # Then the next model call sees the sub-agent's answer as the agent's own message
    last = agent.model.requests[-1].body
    assert "Tea is great." in _assistant_texts(last), last["messages"]
    lines = _proactive(agent)
    assert [(line["source"], line["message"]["text"]) for line in lines] == [
        ("subagent", "Tea is great.")
    ]


def test_scheduled_sub_agents_message_is_in_the_next_turns_transcript(
    unguarded: AgentRig, clock: ManualClock
) -> None:
    agent = unguarded
    start = datetime.fromtimestamp(clock.now, UTC) + timedelta(hours=1)
    agent.model.script(
        Reply.tool(
            "delegate_scheduled_task",
            {"task": "remind about tea", "scheduled_for": start.isoformat()},
        ),
        Reply.answer("I will remind you in an hour."),
        Reply.answer("Reminder: tea!"),
        Reply.answer("You're welcome."),
    )
    agent.say("remind me about tea in an hour")
    # When the hour passed, the reminder was sent, and the person answers it
    clock.advance(3601)
    drain(agent.runtime)
    agent.say("thanks for the reminder")
    # Then the turn answering knows what the reminder said
    assert "Reminder: tea!" in _assistant_texts(agent.model.requests[-1].body)
    assert [line["source"] for line in _proactive(agent)] == ["scheduled"]


def test_a_replayed_reply_is_kept_once(agent: AgentRig) -> None:
    # Given a sub-agent's answer sent and kept
    agent.model.script(
        Reply.tool("delegate_async_task", {"task": "research tea"}),
        Reply.answer("I started the research."),
        Reply.answer("Tea is great."),
    )
    agent.say("research tea in the background")
    sent = [
        json.loads(fields["event"])
        for _id, fields in agent.runtime.redis.xrange(agent.runtime.keys.events)
        if fields["name"] == REPLY_READY
    ][-1]
    # When a replay of the run sends the same reply event (its id derives from run and step)
    target = ReplyTarget(
        channel="test", destination=Destination(chat_id="chat-1"), session_key="chat-1"
    )
    kept = keep_proactive(
        agent.deps.sessions, target, "Tea is great.", source="subagent", key=sent["id"],
        run_id=sent["data"]["run_id"],
    )  # fmt: skip
    # Then nothing more is written
    assert not kept, "a replayed reply must not be kept twice"
    assert len(_proactive(agent)) == 1


def _message(agent: AgentRig, text: str, session: str, chat: str, sender: str) -> None:
    """Publish a message in `session` answered in chat `chat`, and run what is due."""
    data = {
        "message": text, "session_key": session, "channel": "test",
        "sender": {"id": sender, "name": sender}, "destination": {"chat_id": chat},
    }  # fmt: skip
    publish({"name": MESSAGE_RECEIVED, "data": data}, runtime=agent.runtime)
    drain(agent.runtime)


def test_a_system_sessions_answer_joins_the_chat_it_reaches(agent: AgentRig) -> None:
    # Given a function's own session whose turn answers into the person's chat 42
    agent.model.script(Reply.answer("Nightly report: all green."), Reply.answer("Yes, all."))
    _message(agent, "write the nightly report", "system-nightly", "42", "system")
    # When the person in chat 42 asks about it
    _message(agent, "was everything green?", "test-42", "42", "u1")
    # Then their turn sees the report as something the agent said
    assert "Nightly report: all green." in _assistant_texts(agent.model.requests[-1].body)
    assert [line["source"] for line in _proactive(agent, "test-42")] == ["system"]


def test_chat_session_key_matches_the_channels_convention() -> None:
    system = ReplyTarget(
        channel="telegram", destination=Destination(chat_id="7", thread_id="3"),
        session_key="system-cron",
    )  # fmt: skip
    assert chat_session_key(system) == "telegram-7-3"
    person = system.model_copy(update={"session_key": "telegram-7-3"})
    assert chat_session_key(person) == "telegram-7-3"
    nowhere = ReplyTarget(channel="system", destination=Destination(chat_id="x"))
    assert chat_session_key(nowhere) is None


def test_a_proactive_message_never_splits_a_tool_call_from_its_result() -> None:
    # Given a sub-agent's answer written while the chat's turn waited on a tool
    call = ToolCall(id="c1", name="read_file", arguments={})
    lines = [
        SessionLine(message=Message.user("read it")),
        SessionLine(message=Message.assistant("", tool_calls=(call,))),
        SessionLine(message=Message.assistant("Tea is great."), proactive=True),
        SessionLine(message=Message.tool(ToolResult(tool_call_id="c1", content="text"))),
        SessionLine(message=Message.assistant("Done.")),
    ]
    # Then the model sees it after the result
    roles = [(m.role, m.text) for m in messages_of(lines)]
    assert roles == [
        ("user", "read it"), ("assistant", ""), ("tool", ""),
        ("assistant", "Tea is great."), ("assistant", "Done."),
    ]  # fmt: skip
