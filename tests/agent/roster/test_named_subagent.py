"""A sub-agent run by name: its file's instructions, model, tools and turn limit."""

from __future__ import annotations

from harness.events import SUBAGENT_SPAWN
from harness.runtime import publish
from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig
from tests.fakes.model_server import Reply


def _spawn(agent: AgentRig, name: str, task: str) -> None:
    reply = {"channel": "test", "destination": {"chat_id": "chat-1"}, "session_key": "chat-1"}
    data = {"task": task, "agent": name, "reply": reply}
    publish({"name": SUBAGENT_SPAWN, "data": data}, runtime=agent.runtime)
    drain(agent.runtime)


def test_named_agent_runs_with_its_instructions_model_and_only_its_tools(
    agent: AgentRig,
) -> None:
    # Given a researcher with its own model, two tools (one the fleet lacks) and instructions
    folder = agent.workspace / "agents" / "researcher"
    folder.mkdir(parents=True)
    (folder / "AGENT.md").write_text(
        "---\ndescription: Reads sources.\nmodel: claude-haiku-4-5\n"
        "tools: [read, no_such_tool]\nmax_turns: 3\n---\nYou cite every source.\n"
    )
    agent.model.script(Reply.answer("Sources: none."))

    # When a task is given to it by name
    _spawn(agent, "researcher", "find sources on tea")

    # Then its one model call had its instructions instead of SOUL.md, its model and its
    # tools only, and its answer went to the chat
    [request] = [r.body for r in agent.model.requests]
    system = " ".join(block["text"] for block in request["system"])
    assert "You are researcher." in system and "You cite every source." in system
    assert request["model"] == "claude-haiku-4-5"
    assert [t["name"] for t in request["tools"]] == ["read"]
    assert agent.replies() == ["Sources: none."]


def test_unknown_named_agent_answers_that_there_is_none(agent: AgentRig) -> None:
    # Given no agent files
    # When a task is given to an agent that does not exist
    _spawn(agent, "ghost", "anything")

    # Then no model was called, and the chat is told
    assert agent.model.requests == []
    assert agent.replies() == ["(There is no agent named 'ghost'.)"]
