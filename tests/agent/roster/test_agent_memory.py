"""A named agent's memory is its own: under `memory/agents/<name>/`, distilled on its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.agent.memory.scope import all_roots, memory_root, root_label
from harness.agent.session import SessionStore
from tests.agent.conftest import AgentRig
from tests.fakes.model_server import Reply


def test_a_named_agents_notes_stay_out_of_the_default_agents_memory(agent: AgentRig) -> None:
    # Given coder bound to chat A, remembering something there (shared memory)
    folder = agent.workspace / "agents" / "coder"
    folder.mkdir(parents=True)
    (folder / "AGENT.md").write_text(
        "---\ndescription: Writes code.\nbindings: [{channel: test, chat_id: chat-a}]\n---\nCode.\n"
    )
    agent.model.script(
        Reply.tool("remember", {"note": "the build uses make"}), Reply.answer("Noted.")
    )
    agent.say("we build with make", session="chat-a")

    # When the default agent answers chat B, and coder chat A again
    agent.model.script(Reply.answer("hi"), Reply.answer("make it is"))
    agent.say("hello", session="chat-b")
    agent.say("how do we build?", session="chat-a")

    # Then the note is in coder's memory folder and prompt, not the default agent's
    main_call, coder_call = (r.body for r in agent.model.requests[-2:])
    assert "the build uses make" not in json.dumps(main_call["system"])
    assert "the build uses make" in json.dumps(coder_call["system"])
    logs = list((agent.workspace / "memory" / "agents" / "coder" / "memory").glob("*.md"))
    assert logs and "the build uses make" in logs[0].read_text()


def test_memory_roots_of_a_named_agent(tmp_path: Path) -> None:
    # Given a workspace and a private folder
    workspace, private = tmp_path / "ws", tmp_path / "private"
    # When asking for a named agent's roots
    shared = memory_root(workspace, "shared", "chat-a", private, "coder")
    chat = memory_root(workspace, "per-chat", "chat-a", private, "coder")
    default_chat = memory_root(workspace, "per-chat", "chat-a", private)
    # Then they lie under its own folder; the default agent's are as they always were
    assert shared == workspace / "memory" / "agents" / "coder"
    assert chat.parent == private / "memory" / "agents" / "coder" / "chats"
    assert default_chat.parent == private / "memory" / "chats"
    assert memory_root(workspace, "shared", "chat-a", private) == workspace


def test_all_roots_lists_named_agents_roots_with_labels_no_other_root_has(tmp_path: Path) -> None:
    # Given the same chat's per-chat memory for the default agent and two named ones, and
    # one named agent's shared memory
    workspace, private = tmp_path / "ws", tmp_path / "private"
    roots = [
        memory_root(workspace, "per-chat", "chat-a", private),
        memory_root(workspace, "per-chat", "chat-a", private, "coder"),
        memory_root(workspace, "per-chat", "chat-a", private, "writer"),
        memory_root(workspace, "shared", None, private, "writer"),
    ]
    for root in roots:
        root.mkdir(parents=True)
    # When every root is listed
    found = all_roots(workspace, private)
    labels = [root_label(root, workspace, private) for root in found]
    # Then each is there once, with a label (the heartbeat's step prefix) of its own
    assert sorted(map(str, found[1:])) == sorted(map(str, roots))
    assert found[0] == workspace and labels[0] == ""
    assert len(set(labels)) == len(labels), labels
    assert labels[1] == roots[0].name, "the default agent's chat label changed"
    assert "agents/writer" in labels and f"agents/coder/{roots[1].name}" in labels


def test_a_named_agents_session_store_is_its_own_folder(tmp_path: Path) -> None:
    # Given the fleet's session store
    store = SessionStore(tmp_path)
    # When a named agent's store is asked for
    coder = store.for_agent("coder")
    # Then its files are under sessions/agents/coder/, one store per name, and a name that is
    # not an agent's (a path) is refused
    assert coder.path_for("chat-a").parent == tmp_path / "sessions" / "agents" / "coder"
    assert store.path_for("chat-a").parent == tmp_path / "sessions"
    assert store.for_agent("coder") is coder
    with pytest.raises(ValueError):
        store.for_agent("../x")
