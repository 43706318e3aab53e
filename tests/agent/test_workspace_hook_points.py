"""The workspace's hooks after `hook-before-tool` (AGENT_WORKSPACE_HOOKS, served by the
sidecar): `hook-after-tool` rewords a result the model reads, never its error flag; the
observe-only `hook-on-start`, `hook-before-model`, `hook-after-model` and `hook-on-finish` are
started once per point, across the replays a turn goes through, and change nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.workspace_hooks import HOOK_AFTER_TOOL, HOOK_BEFORE_TOOL, REWRITTEN
from harness.agent.workspace_observers import (
    HOOK_AFTER_MODEL,
    HOOK_BEFORE_MODEL,
    HOOK_ON_FINISH,
    HOOK_ON_START,
    TEXT_CHARS,
)
from harness.runtime import Context, event, function
from harness.runtime.functions import FunctionRegistry
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply, anthropic_tool_results
from tests.fakes.workspace_functions import serve_as_workspace_function

NOTE = Reply.tool("write", {"path": "notes/a.md", "content": "tea\n"})
Answer = Callable[[dict[str, Any]], Any]
Calls = dict[str, list[dict[str, Any]]]


def _serve(agent: AgentRig, registry: FunctionRegistry, hooks: dict[str, Answer]) -> Calls:
    """Serve each `hooks` entry (id -> answer of its data) as a workspace hook function, with
    AGENT_WORKSPACE_HOOKS on. Returns the data of each run, by hook id."""
    calls: Calls = {hook_id: [] for hook_id in hooks}
    served = []
    for hook_id, answer in hooks.items():

        def run(ctx: Context, hook_id: str = hook_id, answer: Answer = answer) -> Any:
            calls[hook_id].append(dict(ctx.event.data))
            return answer(dict(ctx.event.data))

        served.append(function(id=hook_id, trigger=event(f"hook/{hook_id}"))(run))
    serve_as_workspace_function(agent.runtime, registry, *served)
    agent.deps = build_deps(make_settings(agent.workspace, agent.model, agent_workspace_hooks=True))
    set_agent_deps(agent.deps)
    return calls


def _result(agent: AgentRig) -> dict[str, Any]:
    (result,) = anthropic_tool_results(agent.model.requests[1].body)
    return result


def _text(result: dict[str, Any]) -> str:
    content = result["content"]
    return content if isinstance(content, str) else "".join(b["text"] for b in content)


def test_after_tool_hook_rewrites_the_result_the_model_reads(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a workspace hook-after-tool that rewords every result
    calls = _serve(agent, registry, {HOOK_AFTER_TOOL: lambda _d: {"content": "saved, quietly"}})
    agent.model.script(NOTE, Reply.answer("Noted."))

    # When the model writes a note
    agent.say("note tea")

    # Then the hook saw the call and its result once; the model read the marked rewrite
    ((seen),) = calls[HOOK_AFTER_TOOL]
    assert seen["name"] == "write" and seen["arguments"]["path"] == "notes/a.md"
    assert seen["result"]["is_error"] is False and seen["result"]["content"]
    assert _text(_result(agent)) == REWRITTEN + "saved, quietly"
    assert (agent.workspace / "notes" / "a.md").read_text() == "tea\n"


def test_after_tool_hook_cannot_turn_a_refused_call_into_a_success(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a hook-before-tool that vetoes writes and a hook-after-tool claiming success
    _serve(agent, registry, {
        HOOK_BEFORE_TOOL: lambda _d: {"veto": "no writes"},
        HOOK_AFTER_TOOL: lambda _d: {"content": "written", "is_error": False},
    })  # fmt: skip
    agent.model.script(NOTE, Reply.answer("I may not."))

    # When the model writes a note
    agent.say("note tea")

    # Then the model read the hook's words, still as an error, and nothing was written
    result = _result(agent)
    assert result.get("is_error") is True, result
    assert _text(result).endswith("written")
    assert not (agent.workspace / "notes" / "a.md").exists()


def test_after_tool_hook_answering_something_else_leaves_the_result(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a hook-after-tool answering no content
    calls = _serve(agent, registry, {HOOK_AFTER_TOOL: lambda _d: {"content": 3}})
    agent.model.script(NOTE, Reply.answer("Noted."))

    # When the model writes a note
    agent.say("note tea")

    # Then the model read the tool's own result
    assert len(calls[HOOK_AFTER_TOOL]) == 1
    assert REWRITTEN not in _text(_result(agent))
    assert _text(_result(agent)) == calls[HOOK_AFTER_TOOL][0]["result"]["content"]


def test_observer_hooks_each_start_once_per_point_across_replays(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given the four observe-only hooks, and a hook-after-tool whose invoke suspends and
    # replays the turn
    observers = (HOOK_ON_START, HOOK_BEFORE_MODEL, HOOK_AFTER_MODEL, HOOK_ON_FINISH)
    calls = _serve(agent, registry, {h: lambda _d: None for h in (*observers, HOOK_AFTER_TOOL)})
    agent.model.script(NOTE, Reply.answer("Noted."))

    # When a turn with one tool call (two model calls) runs
    run_id = agent.say("note tea")

    # Then each point started its hook once, with the run, the agent and what it reached
    assert [len(calls[h]) for h in observers] == [1, 2, 2, 1], calls
    (start,) = calls[HOOK_ON_START]
    assert start["run_id"] == run_id and start["agent"] and start["channel"] == "test"
    assert [c["iteration"] for c in calls[HOOK_BEFORE_MODEL]] == [1, 2]
    assert calls[HOOK_BEFORE_MODEL][0]["last"] == {"role": "user", "text": "note tea"}
    first, second = calls[HOOK_AFTER_MODEL]
    assert first["tool_calls"] == ["write"] and second["text"] == "Noted."
    assert first["usage"]["output_tokens"] >= 0 and "input_tokens" in second["usage"]
    (finish,) = calls[HOOK_ON_FINISH]
    assert finish["iterations"] == 2 and finish["text"] == "Noted."
    assert finish["hit_limit"] is False
    assert agent.replies() == ["Noted."]


def test_failing_observer_hooks_change_nothing(agent: AgentRig, registry: FunctionRegistry) -> None:
    # Given observe-only hooks that all fail
    def fails(_data: dict[str, Any]) -> Any:
        raise RuntimeError("the agent's hook is broken")

    observers = (HOOK_ON_START, HOOK_BEFORE_MODEL, HOOK_AFTER_MODEL, HOOK_ON_FINISH)
    calls = _serve(agent, registry, dict.fromkeys(observers, fails))
    agent.model.script(NOTE, Reply.answer("Noted."))

    # When a turn runs
    agent.say("note tea")

    # Then they ran, and the turn did its work and answered as without them
    assert calls[HOOK_ON_FINISH], calls
    assert (agent.workspace / "notes" / "a.md").read_text() == "tea\n"
    assert agent.replies() == ["Noted."]


def test_observer_hooks_get_capped_text_with_secrets_masked(
    agent: AgentRig, registry: FunctionRegistry
) -> None:
    # Given a hook-before-model, and a message with a key in it, longer than the cap
    calls = _serve(agent, registry, {HOOK_BEFORE_MODEL: lambda _d: None})
    agent.model.script(Reply.answer("Ok."))
    key = "sk-ant-" + "a1b2c3d4" * 4

    # When the message is sent
    agent.say(f"my key is {key} " + "x" * (TEXT_CHARS * 2))

    # Then the hook got the message's start, capped, without the key
    (seen,) = calls[HOOK_BEFORE_MODEL]
    assert len(seen["last"]["text"]) <= TEXT_CHARS
    assert key not in seen["last"]["text"] and "[REDACTED]" in seen["last"]["text"]
