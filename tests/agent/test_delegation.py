"""Delegation to sub-agents: synchronous (invoke), in the background, and scheduled."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness.agent.deps import build_deps, set_agent_deps
from harness.events import FILE_READY, REPLY_READY
from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply, anthropic_tool_results
from tests.runtime_fixtures import ManualClock


@pytest.fixture
def unguarded(agent: AgentRig) -> AgentRig:
    """The rig with AGENT_APPROVAL=off: scheduled delegation asks first otherwise (see
    tests/agent/test_approval_policy.py), and this rig's runs have nobody to ask, so it
    would be refused (tests/agent/test_approval_unattended.py)."""
    set_agent_deps(build_deps(make_settings(agent.workspace, agent.model, agent_approval="off")))
    return agent


def _tool_results(body: dict[str, Any]) -> list[str]:
    return [str(block["content"]) for block in anthropic_tool_results(body)]


def test_delegate_task_returns_the_sub_agents_answer_to_the_model(agent: AgentRig) -> None:
    agent.model.script(
        Reply.tool("delegate_task", {"task": "count the files"}),
        Reply.answer("There are 3 files."),  # the sub-agent
        Reply.answer("Your workspace has 3 files."),
    )
    agent.say("how many files?")
    sub_request, final_request = agent.model.requests[1].body, agent.model.requests[2].body
    assert "count the files" in str(sub_request["messages"][0]["content"])
    assert not any(t["name"].startswith("delegate") for t in sub_request["tools"]), (
        "a sub-agent must not delegate further"
    )
    assert "There are 3 files." in _tool_results(final_request)
    assert agent.replies() == ["Your workspace has 3 files."]


def test_delegate_async_task_replies_to_the_user_by_itself(agent: AgentRig) -> None:
    agent.model.script(
        Reply.tool("delegate_async_task", {"task": "research tea"}),
        Reply.answer("I started the research."),
        Reply.answer("Tea is great."),  # the sub-agent, afterwards
    )
    agent.say("research tea in the background")
    assert agent.replies() == ["I started the research.", "Tea is great."]


def test_delegate_scheduled_task_runs_at_its_time(unguarded: AgentRig, clock: ManualClock) -> None:
    agent = unguarded
    start = datetime.fromtimestamp(clock.now, UTC) + timedelta(hours=1)
    agent.model.script(
        Reply.tool(
            "delegate_scheduled_task",
            {"task": "remind about tea", "scheduled_for": start.isoformat()},
        ),
        Reply.answer("I will remind you in an hour."),
        Reply.answer("Reminder: tea!"),
    )
    agent.say("remind me about tea in an hour")
    assert agent.replies() == ["I will remind you in an hour."]
    clock.advance(3601)
    drain(agent.runtime)
    assert agent.replies() == ["I will remind you in an hour.", "Reminder: tea!"]


def test_delegate_scheduled_task_in_the_past_is_an_error_for_the_model(
    unguarded: AgentRig,
) -> None:
    agent = unguarded
    agent.model.script(
        Reply.tool(
            "delegate_scheduled_task", {"task": "x", "scheduled_for": "2001-01-01T00:00:00+00:00"}
        ),
        Reply.answer("That time has passed."),
    )
    agent.say("remind me in 2001")
    assert any("not in the future" in r for r in _tool_results(agent.model.requests[1].body))
    assert agent.replies() == ["That time has passed."]


def test_a_sub_agent_sends_a_file_into_the_parents_chat(agent: AgentRig) -> None:
    # Given a file in the workspace and a sub-agent that sends it
    (agent.workspace / "summary.md").write_text("# Summary\n")
    agent.model.script(
        Reply.tool("delegate_task", {"task": "send the summary"}),
        Reply.tool("send_file", {"path": "summary.md", "caption": "The summary"}),  # sub-agent
        Reply.answer("Sent it."),  # the sub-agent
        Reply.answer("The summary is on its way."),
    )

    # When the person asks in chat-7
    agent.say("send me the summary", session="chat-7")

    # Then the sub-agent had the tool, and the file went to chat-7, before the parent's answer
    assert "send_file" in [t["name"] for t in agent.model.requests[1].body["tools"]]
    events = [
        (fields["name"], json.loads(fields["event"])["data"])
        for _id, fields in agent.runtime.redis.xrange(agent.runtime.keys.events)
        if fields["name"] in (FILE_READY, REPLY_READY)
    ]
    assert [name for name, _ in events] == [FILE_READY, REPLY_READY], events
    file = events[0][1]
    assert (file["name"], file["caption"], file["destination"]["chat_id"]) == (
        "summary.md",
        "The summary",
        "chat-7",
    )
