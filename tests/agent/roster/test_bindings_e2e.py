"""Two agents on two chats of one fleet: each chat answered by its bound agent, with its own
instructions, model settings, transcript and history."""

from __future__ import annotations

import shutil
from typing import Any

from harness.agent.deps import build_deps, set_agent_deps
from tests.agent.conftest import AgentRig, KillsTheWorkerOnce, make_settings
from tests.fakes.model_server import Reply
from tests.runtime_fixtures import ManualClock

CODER = "You write small, tested code."


def _coder(agent: AgentRig, front: str = "bindings: [{channel: test, chat_id: chat-a}]") -> None:
    folder = agent.workspace / "agents" / "coder"
    folder.mkdir(parents=True)
    (folder / "AGENT.md").write_text(
        f"---\ndescription: Writes code.\ntemperature: 0.3\n{front}\n---\n{CODER}\n"
    )


def _system(request: dict[str, Any]) -> str:
    return " ".join(block["text"] for block in request["system"])


def _texts(request: dict[str, Any]) -> list[str]:
    return [
        block["text"]
        for message in request["messages"]
        for block in message["content"]
        if block.get("type") == "text"
    ]


def test_each_chat_is_answered_by_its_bound_agent_with_its_own_transcript(
    agent: AgentRig,
) -> None:
    # Given chat A bound to `coder` by its file, chat B bound to nobody
    _coder(agent)
    agent.model.script(Reply.answer("coder: one"), Reply.answer("main: one"))

    # When each chat gets a message
    agent.say("A1", session="chat-a")
    agent.say("B1", session="chat-b")

    # Then chat A's model call had coder's instructions and temperature, chat B's the default
    # agent's prompt and no temperature
    coder_call, main_call = (r.body for r in agent.model.requests)
    assert CODER in _system(coder_call) and "You are coder." in _system(coder_call)
    assert coder_call["temperature"] == 0.3
    assert CODER not in _system(main_call) and "temperature" not in main_call
    assert agent.replies() == ["coder: one", "main: one"]
    # and each conversation is in its own file: coder's under its folder, chat B's as before
    sessions = agent.deps.sessions
    coder_file = sessions.for_agent("coder").path_for("chat-a")
    assert coder_file.is_file() and coder_file.parent == sessions.dir / "agents" / "coder"
    assert not sessions.path_for("chat-a").exists(), "chat A's turn went to the default's file"
    assert sessions.path_for("chat-b").is_file()


def test_a_second_message_sees_only_its_chat_and_agent_history(agent: AgentRig) -> None:
    # Given coder answered once in chat A, and the default agent once in chat B
    _coder(agent)
    agent.model.script(Reply.answer("coder: one"), Reply.answer("main: one"))
    agent.say("A1", session="chat-a")
    agent.say("B1", session="chat-b")

    # When chat A writes again
    agent.model.script(Reply.answer("coder: two"))
    agent.say("A2", session="chat-a")

    # Then coder saw chat A's conversation, and nothing of chat B's
    last = agent.model.requests[-1].body
    assert CODER in _system(last)
    texts = _texts(last)
    assert texts[:3] == ["A1", "coder: one", "A2"], texts
    assert not any("B1" in t or "main: one" in t for t in texts), texts


def test_an_operator_binding_wins_over_the_file_and_one_to_a_missing_agent_falls_back(
    agent: AgentRig,
) -> None:
    # Given coder's file binding chat A, and the operator binding chat A to a missing agent
    # and chat C to coder
    _coder(agent)
    settings = make_settings(
        agent.workspace, agent.model, agent_bindings="test:chat-a=ghost, test:chat-c=coder"
    )
    set_agent_deps(build_deps(settings))
    agent.model.script(Reply.answer("main answers A"), Reply.answer("coder answers C"))

    # When chats A and C get a message
    agent.say("A1", session="chat-a")
    agent.say("C1", session="chat-c")

    # Then chat A is still answered, by the default agent; chat C by coder
    chat_a, chat_c = (r.body for r in agent.model.requests)
    assert CODER not in _system(chat_a)
    assert CODER in _system(chat_c)
    assert agent.replies() == ["main answers A", "coder answers C"]


def test_a_resumed_run_keeps_the_agent_it_chose(agent: AgentRig, clock: ManualClock) -> None:
    # Given coder bound to chat-1 with one tool, whose first call kills the worker
    tool = KillsTheWorkerOnce()
    _coder(agent, "tools: [kills_the_worker_once]\nbindings: [{channel: test}]")
    agent.die_in_tool(tool, answer="coder done")

    # When coder's file is gone before the run resumes
    shutil.rmtree(agent.workspace / "agents" / "coder")
    agent.resume(clock)

    # Then the run finished as coder (its instructions in the resumed call), answering once
    assert CODER in _system(agent.model.requests[-1].body)
    assert agent.replies() == ["coder done"]
    assert tool.calls == 2
