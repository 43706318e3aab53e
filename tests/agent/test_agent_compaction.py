"""Compaction inside a run: before a think when the session nears the limit, and after the
model reports a context overflow."""

from __future__ import annotations

import json

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.session import CompactionLine, SessionLine
from harness.llm.types import Message
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply


def _long_history(agent: AgentRig, pairs: int = 30, size: int = 4000) -> None:
    lines = []
    for i in range(pairs):
        lines.append(SessionLine(message=Message.user(f"question {i} " + "q" * size)))
        lines.append(SessionLine(message=Message.assistant(f"answer {i} " + "a" * size)))
    agent.deps.sessions.append("chat-1", lines)


def test_context_overflow_compacts_the_session_and_retries_once(agent: AgentRig) -> None:
    # Given a long session and a model that reports an overflow once
    _long_history(agent)
    agent.model.script(
        Reply.context_overflow(),
        Reply.answer("nothing to remember"),
        Reply.answer("## Goal\nKeep chatting"),
        Reply.answer("Here is my answer."),
    )
    # When the user writes
    agent.say("and now?")
    # Then the old part was summarised, the session replaced (old one archived), and answered
    assert agent.replies() == ["Here is my answer."]
    lines = agent.deps.sessions.load("chat-1")
    assert isinstance(lines[0], CompactionLine) and "Keep chatting" in lines[0].summary
    archive = agent.deps.private / "sessions" / "archive"
    assert not (agent.workspace / "sessions").exists(), "transcripts stay outside the workspace"
    assert list(archive.glob("*.jsonl")), "the old file must be kept"
    retried = agent.model.requests[3].body["messages"]
    assert "[Conversation summary]" in str(retried[0]["content"])
    assert len(retried) < 61, "the retried call must send the compacted conversation"


def test_session_near_the_limit_is_compacted_before_thinking(agent: AgentRig) -> None:
    agent.deps = build_deps(
        make_settings(agent.workspace, agent.model, agent_context_tokens=40_000)
    )
    set_agent_deps(agent.deps)
    _long_history(agent)
    agent.model.script(
        Reply.answer("nothing to remember"), Reply.answer("## Goal\nsummary"), Reply.answer("Fine.")
    )
    agent.say("hello again")
    assert agent.replies() == ["Fine."]
    _flush, summary_request, think_request = (r.body for r in agent.model.requests)
    assert "Goal" in str(summary_request["system"])
    assert "[Conversation summary]" in str(think_request["messages"][0]["content"])
    assert "hello again" in str(think_request["messages"][-1]["content"])


def test_before_compaction_a_silent_turn_remembers_and_sends_nothing(agent: AgentRig) -> None:
    # Given a session near the limit whose old part mentions the user's sister
    agent.deps = build_deps(
        make_settings(agent.workspace, agent.model, agent_context_tokens=40_000)
    )
    set_agent_deps(agent.deps)
    agent.deps.sessions.append("chat-1", [SessionLine(message=Message.user("My sister is Ada."))])
    _long_history(agent)
    agent.model.script(
        Reply.tool("remember", {"note": "The user's sister is called Ada."}),
        Reply.answer("## Goal\nsummary"),
        Reply.answer("Fine."),
    )
    # When the user writes and the session is compacted
    agent.say("hello again")
    # Then the note is in today's log, offered only the remember tool, and the chat got only
    # the answer; the silent turn left no trace in the session
    logs = list((agent.workspace / "memory").glob("*.md"))
    assert any("sister is called Ada" in p.read_text() for p in logs), "the note must be logged"
    flush = agent.model.requests[0].body
    assert [tool["name"] for tool in flush["tools"]] == ["remember"]
    assert "My sister is Ada." in str(flush["messages"])
    assert agent.replies() == ["Fine."]
    assert "remember" not in json.dumps(agent.session_lines())
