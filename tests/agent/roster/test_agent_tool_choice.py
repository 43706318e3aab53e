"""An agent file's `tool_choice`: sent on its loop's model calls, never on the last one (tools
off), never for the default agent; only the modes, never one tool's name."""

from __future__ import annotations

from pathlib import Path

from harness.agent.roster import load_roster
from tests.agent.conftest import AgentRig
from tests.fakes.model_server import Reply


def _agent(workspace: Path, name: str, front: str) -> None:
    folder = workspace / "agents" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "AGENT.md").write_text(f"---\ndescription: Files things.\n{front}---\nBe tidy.\n")


def test_agent_tool_choice_is_sent_on_each_call_but_the_last(agent: AgentRig) -> None:
    # Given chat A bound to an agent that must call a tool on each call, with two turns
    _agent(
        agent.workspace,
        "filer",
        "tool_choice: any\nmax_turns: 2\ntools: [read]\n"
        "bindings: [{channel: test, chat_id: chat-a}]\n",
    )
    (agent.workspace / "notes.txt").write_text("tea")
    agent.model.script(Reply.tool("read", {"path": "notes.txt"}), Reply.answer("Filed."))

    # When chat A gets a message
    agent.say("File my notes", session="chat-a")

    # Then the first call forced a tool, and the last (offered no tools) sent no choice
    first, last = (r.body for r in agent.model.requests)
    assert first.get("tool_choice") == {"type": "any"}, first
    assert "tools" not in last and "tool_choice" not in last, last
    assert agent.replies() == ["Filed."]


def test_default_agent_sends_no_tool_choice(agent: AgentRig) -> None:
    # Given the default agent (no file)
    agent.model.script(Reply.answer("Hello."))

    # When a chat gets a message
    agent.say("hi")

    # Then its model call carries tools but no tool_choice (the request is as before)
    [call] = (r.body for r in agent.model.requests)
    assert call.get("tools") and "tool_choice" not in call, call


def test_agent_file_may_not_force_one_named_tool(tmp_path: Path) -> None:
    # Given an agent file whose tool_choice names a tool, and one with a mode
    _agent(tmp_path, "stuck", "tool_choice: read\n")
    _agent(tmp_path, "quiet", "tool_choice: none\n")

    # When the agents are loaded
    roster = load_roster(tmp_path)

    # Then the named tool is an error with its line, and the mode loads
    assert roster.get("stuck") is None
    [error] = [e for e in roster.errors if "stuck" in str(e)]
    assert ":3:" in str(error) and "tool_choice" in str(error), error
    quiet = roster.get("quiet")
    assert quiet is not None and quiet.tool_choice == "none"
