"""Conversations' private files (transcripts, per-chat memory) live in the state folder,
outside the workspace the tools and the shell see; a conversation can read its own
transcript, and only its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.agent.deps import build_deps
from harness.errors import ConfigurationError
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import ModelServer, Reply, anthropic_tool_results


def test_old_private_folders_move_out_of_the_workspace(
    tmp_path: Path, model_server: ModelServer
) -> None:
    # Given a workspace laid out before the state folder held the conversations
    workspace = tmp_path / "workspace"
    (workspace / "sessions").mkdir(parents=True)
    (workspace / "sessions" / "chat-1.jsonl").write_text("old transcript\n")
    (workspace / "memory" / "chats" / "chat-1").mkdir(parents=True)
    (workspace / "memory" / "chats" / "chat-1" / "MEMORY.md").write_text("old memory\n")

    # When the agent's dependencies are built
    deps = build_deps(make_settings(workspace, model_server))

    # Then both are in the private folder, beside the workspace, and gone from it
    assert deps.private == (tmp_path / ".harness").resolve()
    assert (deps.private / "sessions" / "chat-1.jsonl").read_text() == "old transcript\n"
    memory = deps.private / "memory" / "chats" / "chat-1" / "MEMORY.md"
    assert memory.read_text() == "old memory\n"
    assert not (workspace / "sessions").exists()
    assert not (workspace / "memory" / "chats").exists()


def test_a_state_folder_inside_the_workspace_is_refused(
    tmp_path: Path, model_server: ModelServer
) -> None:
    workspace = tmp_path / "workspace"
    settings = make_settings(workspace, model_server, harness_state_dir=workspace / "state")

    with pytest.raises(ConfigurationError, match="is inside the workspace"):
        build_deps(settings)


def _tool_results(body: dict[str, Any]) -> list[str]:
    return [block["content"] for block in anthropic_tool_results(body)]


def test_a_chat_reads_its_own_transcript_and_not_anothers(agent: AgentRig) -> None:
    # Given two conversations with the agent
    agent.model.script(Reply.answer("hi A"))
    agent.say("the door code is 4711", session="chat-a")
    agent.model.script(Reply.answer("hi B"))
    agent.say("my cat is called Tom", session="chat-b")
    own = agent.deps.sessions.path_for("chat-b")
    other = agent.deps.sessions.path_for("chat-a")
    # When chat B asks for both transcripts through the read tool
    agent.model.script(
        Reply.tool("read", {"path": str(own)}),
        Reply.tool("read", {"path": str(other)}),
        Reply.answer("done"),
    )
    agent.say("what did we say?", session="chat-b")
    # Then the prompt says where its transcript is; its own reads, the other is refused
    last = agent.model.requests[-1].body
    assert f"transcript (JSON lines, read-only): {own}" in json.dumps(last)
    own_result, other_result = _tool_results(last)[-2:]
    assert "my cat is called Tom" in own_result
    assert "4711" not in other_result and "outside the workspace" in other_result
