"""A person's own lifecycle hooks, from installed packages: the `harness.hooks` entry points.

A package adds hooks by naming an object (or a class, made with no arguments) in the
`harness.hooks` group; the object implements any of these methods, each optional:

    [project.entry-points."harness.hooks"]
    audit = "harness_audit:AuditHooks"

    on_start(info: RunInfo) -> None             a turn (chat or sub-agent) starts executing
    before_model(messages: list[Message]) -> None
    after_model(turn: AssistantTurn) -> None
    before_tool(call: ToolCall) -> ToolCall | ToolResult | None
        the call to run (changed or not), a result that answers it instead (a veto: the
        model reads it, the tool never runs), or None for "unchanged"
    after_tool(call: ToolCall, result: ToolResult) -> ToolResult | None
    on_finish(outcome: LoopOutcome) -> None

They are decision points of the loop (`harness.agent.hooks`): called on every execution of a
run, a replay after a crash or a wait included, so a hook must decide the same on the same
input (keep its own side effects idempotent). They come after the approval hook: a hook sees
the call a person approved, and a call it rewrites runs as rewritten without asking again
(a plug-in is the operator's code, installed in the fleet's environment). Hooks from the
workspace are never loaded here: the agent's own hooks run in the sidecar's sandbox
(`harness.agent.workspace_hooks`).

A hook that raises, or returns something else than it may, is left out of that one call with
one log line; the turn goes on as if it were absent. The plug-ins are imported once per
process, the first time a turn asks for them; one object serves every turn (and the calls of
a batch are decided one by one, on the turn's thread).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import TYPE_CHECKING, Any

from harness import plugins
from harness.agent.hooks import Hooks
from harness.llm.types import AssistantTurn, Message, ToolCall, ToolResult

if TYPE_CHECKING:  # only the types: the loop and the turn import `hooks`, not this module
    from harness.agent.loop import LoopOutcome
    from harness.agent.turn import DurableTurn

log = logging.getLogger(__name__)

POINTS = ("on_start", "before_model", "after_model", "before_tool", "after_tool", "on_finish")

_lock = threading.Lock()
_loaded: list[plugins.Plugin] | None = None


@dataclass(frozen=True)
class RunInfo:
    """What `on_start` is told about the turn: its run, the function running it
    (`agent-handle-message` or `agent-sub-agent`), the agent's name, and where it talks."""

    run_id: str
    function_id: str
    agent: str
    channel: str
    session_key: str | None


def load_hook_plugins(found: Iterable[EntryPoint] | None = None) -> list[str]:
    """Load the hook plug-ins (`found`, default every `harness.hooks` entry point installed)
    in place of those loaded before; their names, in the order they are called. One that
    fails to import, or names an object with none of the hook methods, is left out with one
    log line. Never raises for a plug-in's fault."""
    global _loaded
    loaded = [
        plugins.Plugin(p.name, _instance(p.value), p.origin)
        for p in plugins.load(plugins.HOOKS, found, _has_a_point, "an object with hook methods")
    ]
    with _lock:
        _loaded = [p for p in loaded if p.value is not None]
    return [p.name for p in _loaded]


def hooks_for(turn: DurableTurn) -> list[Hooks]:
    """The plug-ins' hooks for one execution of `turn` (loaded now if not yet), after their
    `on_start` was told about it. Never raises for a plug-in's fault."""
    with _lock:
        loaded = _loaded
    if loaded is None:
        load_hook_plugins()
        with _lock:
            loaded = _loaded or []
    info = RunInfo(
        run_id=turn.ctx.run_id,
        function_id=turn.ctx.function_id,
        agent=turn.profile.name,
        channel=turn.channel,
        session_key=turn.session_key,
    )
    hooks = [PluginHook(p.name, p.value) for p in loaded]
    for hook in hooks:
        hook.on_start(info)
    return list[Hooks](hooks)


class PluginHook(Hooks):
    """One plug-in's object as a `Hooks` of the loop, each point guarded (see the module
    docstring): what it lacks, raises or answers wrongly changes nothing."""

    def __init__(self, name: str, target: object) -> None:
        self.name = name
        self.target = target

    def on_start(self, info: RunInfo) -> None:
        """Tell the plug-in a turn starts."""
        self._call("on_start", info)

    def before_model(self, messages: Sequence[Message]) -> None:
        self._call("before_model", list(messages))  # a copy: the model gets what it was sent

    def after_model(self, turn: AssistantTurn) -> None:
        self._call("after_model", turn)

    def before_tool(self, call: ToolCall) -> ToolCall | ToolResult:
        decided = self._call("before_tool", call)
        if isinstance(decided, ToolResult):  # answers this call, whatever id it was given
            return decided.model_copy(update={"tool_call_id": call.id})
        if isinstance(decided, ToolCall):
            return decided.model_copy(update={"id": call.id})
        self._wrong("before_tool", decided)
        return call

    def after_tool(self, call: ToolCall, result: ToolResult) -> ToolResult:
        changed = self._call("after_tool", call, result)
        if isinstance(changed, ToolResult):
            return changed.model_copy(update={"tool_call_id": result.tool_call_id})
        self._wrong("after_tool", changed)
        return result

    def on_finish(self, outcome: LoopOutcome) -> None:
        self._call("on_finish", outcome)

    def _call(self, point: str, *args: Any) -> Any:
        """The plug-in's answer at `point`, or None when it has no such method or raised."""
        method = getattr(self.target, point, None)
        if not callable(method):
            return None
        try:
            return method(*args)
        except Exception as exc:  # a plug-in's bug must not fail the turn
            log.error(
                "%s plug-in %r failed in %s (ignored): %s: %s",
                plugins.HOOKS, self.name, point, type(exc).__name__, exc,
            )  # fmt: skip
            return None

    def _wrong(self, point: str, answer: object) -> None:
        if answer is not None:
            kind = type(answer).__name__
            log.error(
                "%s plug-in %r: %s returned a %s (ignored)", plugins.HOOKS, self.name, point, kind
            )


def _has_a_point(value: object) -> bool:
    return any(callable(getattr(value, point, None)) for point in POINTS)


def _instance(value: object) -> object | None:
    """The hook object an entry point names: the object, or a class made with no arguments
    (None, with one log line, when that fails)."""
    if not isinstance(value, type):
        return value
    try:
        made: object = value()
    except Exception as exc:
        log.error(
            "%s plug-in %s could not be made: %s: %s", plugins.HOOKS, value, type(exc).__name__, exc
        )
        return None
    return made
