"""AGENT_MEMORY_SCOPE: one memory for the agent, or one per conversation that no other chat
(and no tool) can read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.memory.scope import all_roots, chat_folder_name, memory_root
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply


def _per_chat(agent: AgentRig) -> None:
    deps = build_deps(make_settings(agent.workspace, agent.model, agent_memory_scope="per-chat"))
    set_agent_deps(deps)
    agent.deps = deps


def _system_text(body: dict[str, Any]) -> str:
    return json.dumps(body.get("system", ""))


def test_memory_scope_shared_remembers_across_chats(agent: AgentRig) -> None:
    # Given the default shared memory and a chat where the user's sister is remembered
    agent.model.script(
        Reply.tool("remember", {"note": "Ana's sister is called Ada"}), Reply.answer("Noted.")
    )
    agent.say("my sister is Ada", session="chat-a")
    # When another chat starts
    agent.model.script(Reply.answer("hi"))
    agent.say("hello", session="chat-b")
    # Then the second chat's prompt carries the note
    assert "sister is called Ada" in _system_text(agent.model.requests[-1].body)


def test_memory_scope_per_chat_keeps_each_conversation_to_itself(agent: AgentRig) -> None:
    # Given per-chat memory, and chat A telling the agent a secret it remembers
    _per_chat(agent)
    agent.model.script(
        Reply.tool("remember", {"note": "the door code is 4711"}), Reply.answer("Noted.")
    )
    agent.say("remember the door code 4711", session="chat-a")
    # When chat B talks to the agent, and chat A again
    agent.model.script(Reply.answer("hi B"))
    agent.say("hello", session="chat-b")
    b_prompt = _system_text(agent.model.requests[-1].body)
    agent.model.script(Reply.answer("hi A"))
    agent.say("what was the code?", session="chat-a")
    a_prompt = _system_text(agent.model.requests[-1].body)
    # Then only chat A's prompt holds the note, and it is not in the shared logs
    assert "4711" not in b_prompt
    assert "4711" in a_prompt
    assert not any("4711" in p.read_text() for p in (agent.workspace / "memory").glob("*.md"))


def test_memory_scope_per_chat_memory_is_hidden_from_the_file_tools(agent: AgentRig) -> None:
    # Given a per-chat memory written by chat A
    _per_chat(agent)
    agent.model.script(Reply.tool("remember", {"note": "door code 4711"}), Reply.answer("ok"))
    agent.say("remember 4711", session="chat-a")
    # When chat B greps the workspace and reads chat A's folder directly
    folder = f"memory/chats/{chat_folder_name('chat-a')}/memory"
    agent.model.script(
        Reply.tool("grep", {"pattern": "4711"}),
        Reply.tool("ls", {"path": folder}),
        Reply.answer("nothing"),
    )
    agent.say("find the door code", session="chat-b")
    # Then neither tool reveals it
    messages = agent.model.requests[-1].body["messages"]
    results = [
        block["content"]
        for message in messages[-4:]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == 2
    assert "\nno matches for '4711'" in results[0], results[0]
    assert "is inside memory/chats/, which is private" in results[1], results[1]


def test_memory_scope_roots(tmp_path: Path) -> None:
    shared = memory_root(tmp_path, "shared", "chat-a")
    chat = memory_root(tmp_path, "per-chat", "telegram-42/../x")
    assert shared == tmp_path
    assert chat.parent == tmp_path / "memory" / "chats" and ".." not in chat.name
    assert memory_root(tmp_path, "per-chat", None) == tmp_path, "no session: shared memory"
    chat.mkdir(parents=True)
    assert all_roots(tmp_path) == [tmp_path, chat]
