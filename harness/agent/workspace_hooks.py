"""Lifecycle hooks the agent wrote: durable functions of the workspace's `functions/` folder,
invoked where the sidecar serves them (its sandboxed host), never run in the fleet.

Opt-in (`AGENT_WORKSPACE_HOOKS=true`); each hook is a function with a fixed id:

    # workspace/functions/hooks.py
    @function(id="hook-before-tool", trigger=event("hook/before-tool"))
    def before_tool(ctx):
        name, arguments = ctx.event.data["name"], ctx.event.data["arguments"]
        if name == "bash" and "rm -rf" in arguments.get("command", ""):
            return {"veto": "no recursive deletes"}
        return None                           # go on with the call unchanged

`hook-before-tool` is invoked (`ctx.step.invoke`, one durable step per tool call: a replay
reads its answer from the journal) with `{"name", "arguments"}` and may answer
`{"veto": "<reason>"}` (the tool never runs; the model reads the reason) or
`{"arguments": {...}}` (the call runs with those arguments). Anything else, a failure or no
answer within `HOOK_TIMEOUT` lets the call go on unchanged: the hook is the agent's own code,
not a control. It comes BEFORE the approval hook in the chain, so a changed call is the one
approval decides on. Whether the function exists is read once per run, in a step
("workspace-hooks"), from what the sidecar registered from `functions/`.

`hook-after-tool` is invoked the same way after each call, with `{"name", "arguments",
"result": {"content", "is_error"}}` (the content's first `SENT_CHARS`, known secret shapes
masked), and may answer `{"content": "<text>"}`: the model reads that text (its first
`REWRITE_CHARS`) after a line saying the hook rewrote it, so neither the model nor a person
reading the transcript takes it for the tool's own words. `is_error` stays what the tool (or
the refusal) said: a hook can reword a refused or failed call, never make it a success.
Anything else, a failure or no answer in time leaves the result unchanged.

The observe-only points (`hook-on-start`, `hook-before-model`, `hook-after-model`,
`hook-on-finish`) are started without waiting (`harness.agent.workspace_observers`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.agent.hooks import Hooks
from harness.agent.workspace_observers import OBSERVER_IDS, WorkspaceObservers
from harness.errors import StepFailedError
from harness.llm.types import ToolCall, ToolResult
from harness.redaction import redact
from harness.runtime.function_sources import FILE_SOURCE, source_ids

if TYPE_CHECKING:
    from harness.agent.turn import DurableTurn
    from harness.runtime import Runtime
    from harness.runtime.steps import Context

HOOK_BEFORE_TOOL = "hook-before-tool"
"""The id of the workspace function asked before each tool call."""
HOOK_AFTER_TOOL = "hook-after-tool"
"""The id of the workspace function asked after each tool call."""
HOOK_IDS = (HOOK_BEFORE_TOOL, HOOK_AFTER_TOOL, *OBSERVER_IDS)
HOOK_TIMEOUT = "60s"
REASON_CHARS = 500
SENT_CHARS = 4_000
REWRITE_CHARS = 16_000
REWRITTEN = f"(The workspace's {HOOK_AFTER_TOOL} rewrote this result.)\n"


def workspace_hooks(turn: DurableTurn) -> list[Hooks]:
    """The workspace's hooks for `turn`'s run: none unless AGENT_WORKSPACE_HOOKS, else one
    per hook function the sidecar registered (read once per run, in a step). Made once per
    execution of the run: `hook-on-start` (when served) is started now."""
    if not turn.deps.settings.agent_workspace_hooks:
        return []
    ctx = turn.ctx
    served = ctx.step.run("workspace-hooks", served_hooks, ctx.runtime)
    hooks: list[Hooks] = []
    if HOOK_BEFORE_TOOL in served:
        hooks.append(BeforeToolHook(ctx))
    if HOOK_AFTER_TOOL in served:
        hooks.append(AfterToolHook(ctx))
    if set(served) & set(OBSERVER_IDS):
        hooks.append(WorkspaceObservers(ctx, turn.profile.name, turn.channel, served))
    return hooks


def served_hooks(runtime: Runtime) -> list[str]:
    """The hook ids among the functions the sidecar loaded from `functions/`, sorted."""
    loaded = source_ids(runtime, FILE_SOURCE)
    return sorted(i for i in HOOK_IDS if i in loaded)


class BeforeToolHook(Hooks):
    """Asks `hook-before-tool` about each call (see the module)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def before_tool(self, call: ToolCall) -> ToolCall | ToolResult:
        data = {"name": call.name, "arguments": dict(call.arguments)}
        try:
            answer = self.ctx.step.invoke("hook", HOOK_BEFORE_TOOL, data, timeout=HOOK_TIMEOUT)
        except StepFailedError:
            return call  # the agent's hook failing changes nothing (approval still decides)
        return decided(call, answer)


def decided(call: ToolCall, answer: Any) -> ToolCall | ToolResult:
    """What `hook-before-tool`'s answer makes of `call`: a refusal for `{"veto": reason}`,
    the call with other arguments for `{"arguments": {...}}`, else the call unchanged."""
    if not isinstance(answer, dict):
        return call
    veto = answer.get("veto")
    if isinstance(veto, str) and veto.strip():
        reason = " ".join(veto.split())[:REASON_CHARS]
        text = f"(The call was refused by the workspace's {HOOK_BEFORE_TOOL}: {reason})"
        return ToolResult(tool_call_id=call.id, content=text, is_error=True)
    arguments = answer.get("arguments")
    if isinstance(arguments, dict):
        return call.model_copy(update={"arguments": arguments})
    return call


class AfterToolHook(Hooks):
    """Asks `hook-after-tool` about each result (see the module)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def after_tool(self, call: ToolCall, result: ToolResult) -> ToolResult:
        data = {
            "name": call.name,
            "arguments": dict(call.arguments),
            "result": {"content": redact(result.content[:SENT_CHARS]), "is_error": result.is_error},
        }
        try:
            answer = self.ctx.step.invoke("hook-after", HOOK_AFTER_TOOL, data, timeout=HOOK_TIMEOUT)
        except StepFailedError:
            return result  # the agent's hook failing changes nothing
        return rewritten(result, answer)


def rewritten(result: ToolResult, answer: Any) -> ToolResult:
    """What `hook-after-tool`'s answer makes of `result`: its text in place of the content
    (marked, capped) for `{"content": "<text>"}`, else `result` unchanged. `is_error` is
    always the result's own."""
    content = answer.get("content") if isinstance(answer, dict) else None
    if not isinstance(content, str):
        return result
    return result.model_copy(update={"content": REWRITTEN + content[:REWRITE_CHARS]})
