"""A chat bound to a network: the network answers its messages, the chat turn posts the answer
once and keeps the exchange in the network's own transcript."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from harness.addresses import CAN_ANSWER_META
from harness.agent.deps import AgentDeps, build_deps, set_agent_deps
from harness.events import APPROVAL_REQUESTED, MESSAGE_RECEIVED, ApprovalAnswered
from harness.records.stores import redis_records
from harness.runtime import publish
from harness.runtime.testing import drain
from tests.agent.conftest import make_settings
from tests.agent.networks.conftest import NetworkRig
from tests.fakes.model_server import Reply

PAIR = (
    "---\ndescription: Drafts, then reviews.\nagents: [writer, reviewer]\n"
    "router: {kind: sequence, order: [writer, reviewer]}\n{extra}---\n"
)


def _pair(network: NetworkRig, extra: str = "", writer_tools: str = "[read]") -> None:
    network.declare_agent("writer", writer_tools)
    network.declare_agent("reviewer")
    network.declare_network("pair", PAIR.replace("{extra}", extra))


def _bind(network: NetworkRig, bindings: str) -> AgentDeps:
    deps = build_deps(make_settings(network.agent.workspace, network.agent.model,
                                    agent_bindings=bindings))  # fmt: skip
    set_agent_deps(deps)
    return deps


def _systems(network: NetworkRig) -> list[str]:
    return [
        " ".join(block["text"] for block in r.body["system"]) for r in network.agent.model.requests
    ]


def _transcript(deps: AgentDeps, network: str, chat: str) -> list[tuple[str, str]]:
    lines = deps.sessions.for_network(network).load(chat)
    return [(line.message.role, line.message.text) for line in lines]  # type: ignore[union-attr]


def test_a_chat_bound_to_a_network_by_agent_bindings_gets_the_networks_answer(
    network: NetworkRig,
) -> None:
    # Given a network of two agents under a sequence router, bound to chat-1 by the operator
    _pair(network)
    deps = _bind(network, "test:chat-1=network:pair")
    network.agent.model.script(Reply.answer("A draft."), Reply.answer("Reviewed: a poem."))

    # When chat-1 gets a message
    run_id = network.agent.say("Write a poem")

    # Then the writer, then the reviewer took their turn on the message as the task, and the
    # reviewer's final answer is the chat's one reply
    writer, reviewer = _systems(network)
    assert "You are the writer." in writer and "You are the reviewer." in reviewer
    first_task = json.dumps(network.agent.model.requests[0].body["messages"])
    assert "Write a poem" in first_task and "'pair'" in first_task
    assert network.agent.replies() == ["Reviewed: a poem."]
    # and the chat's run answered as the network, the exchange in the network's transcript,
    # none in the default agent's
    chat_run = network.record(run_id).result
    assert chat_run["network"] == "pair" and chat_run["iterations"] == 2, chat_run
    assert _transcript(deps, "pair", "chat-1") == [
        ("user", "Write a poem"),
        ("assistant", "Reviewed: a poem."),
    ]
    assert not deps.sessions.path_for("chat-1").exists(), "the default agent's transcript"


def test_a_chat_bound_by_the_network_file_and_another_chat_keeps_the_default_agent(
    network: NetworkRig,
) -> None:
    # Given the network's file binding chat-1, and no binding of chat-2
    _pair(network, "bindings: [{channel: test, chat_id: chat-1}]\n")
    network.agent.model.script(
        Reply.answer("Draft one."), Reply.answer("Final one."), Reply.answer("main here")
    )

    # When both chats get a message
    network.agent.say("First", session="chat-1")
    network.agent.say("Hello", session="chat-2")

    # Then chat-1 is answered by the network, chat-2 by the default agent
    assert network.agent.replies() == ["Final one.", "main here"]
    *_, main = _systems(network)
    assert "You are the writer." not in main and "You are the reviewer." not in main
    assert _transcript(network.agent.deps, "pair", "chat-2") == []

    # When chat-1 writes again
    network.agent.model.script(Reply.answer("Draft two."), Reply.answer("Final two."))
    network.agent.say("Second", session="chat-1")

    # Then the network answers again, and its transcript of chat-1 holds both exchanges
    assert network.agent.replies()[-1] == "Final two."
    assert [text for _, text in _transcript(network.agent.deps, "pair", "chat-1")] == [
        "First", "Final one.", "Second", "Final two.",
    ]  # fmt: skip


def test_a_chat_bound_to_a_missing_network_is_answered_by_the_default_agent_with_a_warning(
    network: NetworkRig, caplog: pytest.LogCaptureFixture
) -> None:
    # Given chat-1 bound by the operator to a network that does not exist
    _bind(network, "test:chat-1=network:ghost")
    network.agent.model.script(Reply.answer("main answers"))

    # When chat-1 gets a message
    with caplog.at_level(logging.WARNING):
        network.agent.say("Hi")

    # Then the default agent answers it, and one warning names the network
    assert network.agent.replies() == ["main answers"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [w for w in warnings if "'ghost'" in w] == [
        "message bound to network 'ghost', which does not exist or does not load: the default "
        "agent answers"
    ], warnings


def test_a_network_agents_approvals_are_asked_in_the_bound_chat(network: NetworkRig) -> None:
    # Given chat-1 bound to the network, whose writer may write files
    _pair(network, writer_tools="[write]")
    _bind(network, "test:chat-1=network:pair")
    write = Reply.tool("write", {"path": "functions/job.py", "content": "job = 1\n"})
    network.agent.model.script(write, Reply.answer("Wrote it."), Reply.answer("Looks right."))

    # When a person who can answer approvals writes in chat-1
    data = {
        "message": "Write the job", "session_key": "chat-1", "channel": "test",
        "sender": {"id": "u1"}, "destination": {"chat_id": "chat-1"},
        "channel_meta": {CAN_ANSWER_META: True},
    }  # fmt: skip
    publish({"name": MESSAGE_RECEIVED, "data": data}, runtime=network.agent.runtime)
    drain(network.agent.runtime)

    # Then the writer's risky call is asked about in chat-1, and nothing ran or was answered
    [asked] = _events(network, APPROVAL_REQUESTED)
    assert asked["reply"]["destination"]["chat_id"] == "chat-1", asked
    assert not (network.agent.workspace / "functions" / "job.py").exists()
    assert network.agent.replies() == []

    # When it is approved
    approval_id = asked["approval_id"]
    records = redis_records(network.agent.runtime)
    claim = records.approvals.decide_unattended(approval_id, "approve", "t")
    answered = ApprovalAnswered(approval_id=approval_id, decision="approve", by="t", at=claim.at)
    publish(answered.to_event(), runtime=network.agent.runtime)
    drain(network.agent.runtime)

    # Then the write ran, and the network's final answer is the chat's one reply
    assert (network.agent.workspace / "functions" / "job.py").read_text() == "job = 1\n"
    assert network.agent.replies() == ["Looks right."]


def test_messages_that_arrive_while_the_network_runs_are_its_next_task(
    network: NetworkRig,
) -> None:
    # Given chat-1 bound to the network, and two messages arriving before it answers
    _pair(network)
    deps = _bind(network, "test:chat-1=network:pair")
    network.agent.model.script(
        Reply.answer("D1"), Reply.answer("F1"), Reply.answer("D2"), Reply.answer("F2")
    )
    first = network.agent.say("One", run=False)
    network.agent.say("Two", run=False)

    # When the runtime runs
    drain(network.agent.runtime)

    # Then the network answered each in turn within the chat's one run, each answer posted once
    assert network.agent.replies() == ["F1", "F2"]
    assert network.record(first).result["iterations"] == 4
    assert [text for _, text in _transcript(deps, "pair", "chat-1")] == ["One", "F1", "Two", "F2"]


def _events(network: NetworkRig, name: str) -> list[dict[str, Any]]:
    return [
        json.loads(fields["event"])["data"]
        for _id, fields in network.agent.runtime.redis.xrange(network.agent.runtime.keys.events)
        if fields["name"] == name
    ]
