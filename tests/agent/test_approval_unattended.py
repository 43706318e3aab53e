"""Runs with nobody to ask (this rig's `test` channel does not say a person can answer):
a risky call follows `AGENT_APPROVAL_UNATTENDED` at once, and never waits for a button."""

from __future__ import annotations

from typing import Any

from harness.agent.deps import build_deps, set_agent_deps
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


def test_unattended_run_refuses_a_risky_call_by_default_and_says_why(agent: AgentRig) -> None:
    # Given the default AGENT_APPROVAL_UNATTENDED (deny), in a run nobody can be asked in
    agent.model.script(RISKY, Reply.answer("I may not."))
    # When the model writes in functions/
    agent.say("write the job")
    # Then nothing was written and the model was told nobody could be asked
    assert not (agent.workspace / "functions" / "job.py").exists()
    (result,) = _tool_results(agent.model.requests[1].body)
    assert "nobody can be asked" in result and "AGENT_APPROVAL_UNATTENDED=deny" in result, result
