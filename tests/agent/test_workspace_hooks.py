"""The agent's own `hook-before-tool` in workspace/functions/ (served by the sidecar), opt-in
with AGENT_WORKSPACE_HOOKS: invoked durably before each tool call, it can veto the call or
change its arguments, and approval decides on the changed call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.workspace_hooks import HOOK_BEFORE_TOOL
from harness.runtime import Context, event, function
from harness.runtime.functions import FunctionRegistry
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply, anthropic_tool_results
from tests.fakes.workspace_functions import serve_as_workspace_function

NOTE = Reply.tool("write", {"path": "notes/a.md", "content": "tea\n"})


def _hook(
    agent: AgentRig, registry: FunctionRegistry, answer: Callable[[dict[str, Any]], Any], *,
    enabled: bool | None = True,
) -> list[dict[str, Any]]:  # fmt: skip
    """Serve `answer` as the workspace's hook-before-tool, with the setting on (None: left at
    its default). Returns the data of each call."""
    calls: list[dict[str, Any]] = []

    @function(id=HOOK_BEFORE_TOOL, trigger=event("hook/before-tool"))
    def before_tool(ctx: Context) -> Any:
        calls.append(dict(ctx.event.data))
        return answer(dict(ctx.event.data))

    serve_as_workspace_function(agent.runtime, registry, before_tool)
    setting = {} if enabled is None else {"agent_workspace_hooks": enabled}
    settings = make_settings(agent.workspace, agent.model, **setting)
    agent.deps = build_deps(settings)
    set_agent_deps(agent.deps)
    return calls


def _result(agent: AgentRig) -> str:
    (result,) = anthropic_tool_results(agent.model.requests[1].body)
    return str(result["content"])


def test_workspace_hook_vetoes_a_tool_call_and_the_tool_never_runs(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a workspace hook that vetoes every write
    calls = _hook(agent, registry, lambda _d: {"veto": "no writes today"})
    agent.model.script(NOTE, Reply.answer("I may not."))

    # When the model writes a note
    agent.say("note tea")

    # Then the hook was asked with the call, nothing was written, the model read the veto
    assert calls == [{"name": "write", "arguments": {"path": "notes/a.md", "content": "tea\n"}}]
    assert not (agent.workspace / "notes" / "a.md").exists()
    assert "no writes today" in _result(agent)
    assert agent.replies() == ["I may not."]


def test_workspace_hook_changes_the_arguments_of_a_call(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a workspace hook that rewrites what is written
    changed = {"path": "notes/a.md", "content": "TEA\n"}
    _hook(agent, registry, lambda _d: {"arguments": changed})
    agent.model.script(NOTE, Reply.answer("Noted."))

    # When the model writes a note
    agent.say("note tea")

    # Then the call ran with the hook's arguments
    assert (agent.workspace / "notes" / "a.md").read_text() == "TEA\n"


def test_workspace_hook_changed_call_still_goes_through_approval(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a hook that turns a harmless note into a write in functions/ (which needs a
    # person's yes), in a run nobody can be asked in (AGENT_APPROVAL_UNATTENDED=deny)
    risky = {"path": "functions/job.py", "content": "job = 1\n"}
    _hook(agent, registry, lambda _d: {"arguments": risky})
    agent.model.script(NOTE, Reply.answer("I may not."))

    # When the model writes a note
    agent.say("note tea")

    # Then approval decided on the changed call and refused it: nothing was written
    assert not (agent.workspace / "functions" / "job.py").exists()
    assert not (agent.workspace / "notes" / "a.md").exists()
    assert "nobody can be asked" in _result(agent)


def test_workspace_hooks_are_off_by_default(agent: AgentRig, registry: FunctionRegistry) -> None:
    # Given a vetoing hook function, with AGENT_WORKSPACE_HOOKS left at its default
    calls = _hook(agent, registry, lambda _d: {"veto": "no"}, enabled=None)
    agent.model.script(NOTE, Reply.answer("Noted."))

    # When the model writes a note
    agent.say("note tea")

    # Then the hook was never asked and the note was written
    assert calls == []
    assert (agent.workspace / "notes" / "a.md").read_text() == "tea\n"


def test_workspace_hook_answering_nothing_lets_the_call_go_on(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a hook that answers something that is neither a veto nor arguments
    calls = _hook(agent, registry, lambda _d: {"veto": ""})
    agent.model.script(NOTE, Reply.answer("Noted."))

    # When the model writes a note
    agent.say("note tea")

    # Then the call ran unchanged, the hook asked once
    assert len(calls) == 1
    assert (agent.workspace / "notes" / "a.md").read_text() == "tea\n"


def test_workspace_hook_is_asked_in_a_sub_agents_turn_too(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a vetoing workspace hook, and a model that delegates a task whose sub-agent writes
    calls = _hook(agent, registry, lambda d: {"veto": "no"} if d["name"] == "write" else None)
    agent.model.script(
        Reply.tool("delegate_task", {"task": "note tea"}),
        NOTE,
        Reply.answer("The sub-agent could not."),
        Reply.answer("Ok."),
    )

    # When the turn runs
    agent.say("go")

    # Then the parent's delegation and the sub-agent's write were each asked once, and the
    # write was refused
    assert [c["name"] for c in calls] == ["delegate_task", "write"], calls
    assert not (agent.workspace / "notes" / "a.md").exists()
