"""Runs with nobody to ask (this rig's `test` channel does not say a person can answer):
a risky call follows `AGENT_APPROVAL_UNATTENDED`: `deny` and `allow` decide at once, `ask`
(the default) asks the owner in their chat, or refuses when no owner is known."""

from __future__ import annotations

import json
from typing import Any

from harness.agent.approvals.gate import attended
from harness.agent.deps import build_deps, set_agent_deps
from harness.events import (
    APPROVAL_REQUESTED,
    MESSAGE_RECEIVED,
    SUBAGENT_SPAWN,
    ApprovalRequested,
    Destination,
    ReplyTarget,
)
from harness.runtime import publish
from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply, anthropic_tool_results

RISKY = Reply.tool("write", {"path": "functions/job.py", "content": "job = 1\n"})


def _tool_results(body: dict[str, Any]) -> list[str]:
    return [str(block["content"]) for block in anthropic_tool_results(body)]


def test_unattended_run_runs_a_risky_call_when_unattended_runs_are_allowed(
    agent: AgentRig,
) -> None:
    # Given AGENT_APPROVAL_UNATTENDED=allow and a one-hour approval timeout, in a run nobody
    # can be asked in
    settings = make_settings(
        agent.workspace,
        agent.model,
        agent_approval_unattended="allow",
        agent_approval_timeout="3600s",
    )
    set_agent_deps(build_deps(settings))
    agent.model.script(RISKY, Reply.answer("Written."))
    # When the model writes in functions/ (a call that needs approval)
    agent.say("write the job")
    # Then the write ran without asking, and the model got its result, not a refusal
    assert (agent.workspace / "functions" / "job.py").read_text() == "job = 1\n"
    (result,) = _tool_results(agent.model.requests[1].body)
    assert "Not run" not in result, result
    assert agent.replies() == ["Written."]


def test_unattended_run_refuses_a_risky_call_when_set_to_deny_and_says_why(
    agent: AgentRig,
) -> None:
    # Given AGENT_APPROVAL_UNATTENDED=deny, in a run nobody can be asked in
    settings = make_settings(agent.workspace, agent.model, agent_approval_unattended="deny")
    set_agent_deps(build_deps(settings))
    agent.model.script(RISKY, Reply.answer("I may not."))
    # When the model writes in functions/
    agent.say("write the job")
    # Then nothing was written and the model was told nobody could be asked
    assert not (agent.workspace / "functions" / "job.py").exists()
    (result,) = _tool_results(agent.model.requests[1].body)
    assert "nobody can be asked" in result and "AGENT_APPROVAL_UNATTENDED=deny" in result, result


def test_unattended_run_with_no_owner_known_is_refused_and_told_to_set_agent_owner(
    agent: AgentRig,
) -> None:
    # Given the default AGENT_APPROVAL_UNATTENDED (ask), no AGENT_OWNER and nobody paired
    agent.model.script(RISKY, Reply.answer("I may not."))
    # When the model writes in functions/ in a run nobody can be asked in
    agent.say("write the job")
    # Then nothing was written, no request was opened, and the model was told why
    assert not (agent.workspace / "functions" / "job.py").exists()
    (result,) = _tool_results(agent.model.requests[1].body)
    assert "no owner is known" in result and "set AGENT_OWNER" in result, result
    assert not _requests(agent), "a request was published with no owner to ask"


def test_sub_agent_with_no_chat_asks_the_owner_in_their_chat(agent: AgentRig) -> None:
    # Given an owner (AGENT_OWNER) and the default AGENT_APPROVAL_UNATTENDED (ask)
    settings = make_settings(agent.workspace, agent.model, agent_owner="telegram:user:7")
    set_agent_deps(build_deps(settings))
    agent.model.script(RISKY, Reply.answer("Written."))
    # When a sub-agent with no chat to ask in (as a function's run_agent starts one) writes
    # in functions/
    publish({"name": SUBAGENT_SPAWN, "data": {"task": "write the job"}}, runtime=agent.runtime)
    drain(agent.runtime)
    # Then the request went to the owner's direct chat, the owner its only approver, and
    # nothing was written yet
    (raw,) = _requests(agent)
    request = ApprovalRequested.model_validate(json.loads(raw)["data"])
    assert (request.reply.channel, request.reply.destination.chat_id) == ("telegram", "7")
    assert request.approvers == ["telegram:user:7"], request
    assert not (agent.workspace / "functions" / "job.py").exists()


def _requests(agent: AgentRig) -> list[str]:
    return [
        fields["event"]
        for _id, fields in agent.runtime.redis.xrange(agent.runtime.keys.events)
        if fields["name"] == APPROVAL_REQUESTED
    ]


def test_attended_never_for_a_system_session_whatever_its_message_says() -> None:
    # Given a reply target that says a person can answer there
    meta = {"approvals": True}
    chat = Destination(chat_id="42")
    person = ReplyTarget(channel="telegram", destination=chat, channel_meta=meta)
    # When its session is a person's, Then the run is attended
    assert attended(person, "telegram-42")
    # When its session is a system one (a function or cron started it, and its message
    # could claim anything), Then nobody is asked, in the turn or in a sub-agent it started
    assert not attended(person, "system-cleanup")
    system_parent = person.model_copy(update={"session_key": "system-cleanup"})
    assert not attended(system_parent, "subagent-1")


def test_system_session_message_claiming_approvals_runs_no_risky_call(agent: AgentRig) -> None:
    # Given the default AGENT_APPROVAL_UNATTENDED (deny)
    agent.model.script(RISKY, Reply.answer("I may not."))
    # When a message in a system session says a person can answer approvals there
    publish(
        {
            "name": MESSAGE_RECEIVED,
            "data": {
                "message": "write the job",
                "session_key": "system-nightly",
                "channel": "test",
                "sender": {"id": "system", "name": "nightly"},
                "destination": {"chat_id": "system-nightly"},
                "channel_meta": {"approvals": True},
            },
        },
        runtime=agent.runtime,
    )
    drain(agent.runtime)
    # Then the risky call did not run and asked nobody: the run is unattended
    assert not (agent.workspace / "functions" / "job.py").exists()
    (result,) = _tool_results(agent.model.requests[1].body)
    assert "nobody can be asked" in result, result
