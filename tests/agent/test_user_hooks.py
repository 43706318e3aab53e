"""Lifecycle hooks from installed packages (`harness.hooks`): they can veto a tool call, see
each turn start, and a hook that breaks changes nothing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harness.agent.deps import build_deps, set_agent_deps
from harness.tools.base import Tool, ToolContext, ToolParams
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.hook_package import STARTED, VETO, installed_hooks
from tests.fakes.model_server import Reply, anthropic_tool_results


class Recorder(Tool[ToolParams]):
    """Counts its calls; named as the test needs (a stand-in for `bash`, say)."""

    description = "Records."
    parameters = ToolParams

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = 0

    def run(self, params: ToolParams, ctx: ToolContext) -> str:
        self.calls += 1
        return f"{self.name} ran"


def _agent_without_approvals(agent: AgentRig) -> None:
    """No approvals (so a call reaches the plug-ins' hooks) and no real shell."""
    settings = make_settings(
        agent.workspace, agent.model, agent_approval="off", agent_allow_shell=False
    )
    agent.deps = build_deps(settings)
    set_agent_deps(agent.deps)


def _results(agent: AgentRig) -> list[dict[str, object]]:
    return anthropic_tool_results(agent.model.requests[1].body)


def test_a_plugin_hook_vetoes_a_bash_call_and_the_tool_never_runs(
    agent: AgentRig, tmp_path: Path
) -> None:
    # Given an installed package whose hook vetoes bash, and a tool called bash
    _agent_without_approvals(agent)
    bash, other = Recorder("bash"), Recorder("other")
    agent.deps.tools.register(bash)
    agent.deps.tools.register(other)
    agent.model.script(Reply.tool("bash", {}), Reply.tool("other", {}), Reply.answer("Ok."))
    STARTED.clear()
    with installed_hooks(tmp_path / "site", no_bash="NoBash"):
        # When the model calls bash, then another tool
        agent.say("list the files")
    # Then bash never ran and the model read the veto as an error; the other call ran
    assert bash.calls == 0, "a vetoed call must not run"
    (veto,) = _results(agent)
    assert veto["is_error"] is True and VETO in str(veto["content"]), veto
    assert other.calls == 1
    # And the hook was told the turn started (at each execution: with MODEL_CALLS=gateway
    # the turn resumes after every model call)
    assert {(i.function_id, i.agent, i.session_key) for i in STARTED} == {
        ("agent-handle-message", "main", "chat-1")
    }, STARTED


def test_a_plugin_hook_that_raises_is_ignored_with_one_log_line(
    agent: AgentRig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given an installed package whose hook raises at every point
    _agent_without_approvals(agent)
    tool = Recorder("other")
    agent.deps.tools.register(tool)
    agent.model.script(Reply.tool("other", {}), Reply.answer("Done."))
    with caplog.at_level(logging.ERROR), installed_hooks(tmp_path / "site", broken="BROKEN"):
        # When a turn calls a tool
        agent.say("go")
    # Then the turn went on as if the hook were absent
    assert tool.calls == 1
    (result,) = _results(agent)
    assert result["content"] in ("other ran", [{"type": "text", "text": "other ran"}]), result
    assert agent.replies() == ["Done."]
    # And each failure was one log line naming the plug-in and the point
    failed = [r.getMessage() for r in caplog.records if "'broken' failed in" in r.getMessage()]
    assert any("before_tool" in line for line in failed), failed
    assert any("on_start" in line for line in failed), failed
    assert all("\n" not in line for line in failed), failed


def test_a_sub_agents_turn_has_the_plugin_hooks_too(agent: AgentRig, tmp_path: Path) -> None:
    # Given the vetoing package, and a model that delegates a task whose sub-agent calls bash
    _agent_without_approvals(agent)
    agent.model.script(
        Reply.tool("delegate_task", {"task": "count the files"}),
        Reply.tool("bash", {"command": "ls | wc -l"}),
        Reply.answer("The sub-agent could not."),
        Reply.answer("Ok."),
    )
    STARTED.clear()
    with installed_hooks(tmp_path / "site", no_bash="NoBash"):
        # When the turn runs
        agent.say("go")
    # Then the sub-agent's turn was hooked, and its bash call read the veto
    assert [i.function_id for i in STARTED].count("agent-sub-agent") >= 1, STARTED
    (veto,) = anthropic_tool_results(agent.model.requests[2].body)
    assert veto["is_error"] is True and VETO in str(veto["content"]), veto
