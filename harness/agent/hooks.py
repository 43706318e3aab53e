"""The loop's hooks: where approval, streaming and the status line plug into a turn.

A hook is a `Hooks` whose methods it overrides; the others do nothing. It has two kinds of
points, told apart by who calls them and when.

Decision points, called by the loop (`run_agent_loop`) on every execution of a run, a replay
included. A hook therefore decides only on what the run has journaled, or journals what it
decides in a step of its own, so a replay decides the same:

- `before_model(messages)`: the conversation a model call is about to be sent;
- `after_model(turn)`: what the model answered;
- `before_tool(call)`: the call to run (the same, or rewritten), or a `ToolResult` that
  answers the call without running it: a refusal, or a call held for later. It may suspend
  the run (the runtime's `Suspended`) while it waits, for a person's yes; the resumed run
  calls it again and it finds its answer in the journal;
- `after_tool(call, result)`: the result the model is given;
- `on_finish(outcome)`: the loop ended with an answer, or at its iteration limit (not when
  it raised).

Watch points, called by whoever performs a call (the durable turn, inside the call's step),
so only when the call really happens, never on a replay. They show; they never decide, and
must not raise:

- `model_started(think, attempt)`: a model call starts (`think` counts the turn's calls from
  1, replays included; `attempt` is the step's); returns where its streamed text goes, or
  None;
- `model_ended()`: that call ended, answered or failed;
- `tool_started(call)`: a tool call starts running.

`HookChain` composes several hooks in order. Approval (`approvals.hook`), the status line
(`status_hook`) and the streamed text (`streaming_hook`) are hooks the turn's composition
passes in (`handlers`). A person's own lifecycle hooks plug in the same way: packages'
(`user_hooks`) and the agent's own, served by the sidecar (`workspace_hooks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.llm.provider import TextSink
from harness.llm.types import AssistantTurn, Message, ToolCall, ToolResult

if TYPE_CHECKING:  # only the outcome's type: the loop imports this module
    from harness.agent.loop import LoopOutcome


class Hooks:
    """One hook: every point does nothing until a subclass overrides it (see the module
    docstring for when each is called)."""

    def before_model(self, messages: Sequence[Message]) -> None:
        """A model call is about to be sent `messages`."""

    def after_model(self, turn: AssistantTurn) -> None:
        """The model answered `turn`."""

    def before_tool(self, call: ToolCall) -> ToolCall | ToolResult:
        """The call to run, or the result that answers it without running it. May suspend."""
        return call

    def after_tool(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """The result the model is given for `call`."""
        return result

    def on_finish(self, outcome: LoopOutcome) -> None:
        """The loop ended with `outcome`."""

    def model_started(self, think: int, attempt: int) -> TextSink | None:
        """A model call really starts; where its streamed text goes (None: nowhere)."""
        return None

    def model_ended(self) -> None:
        """The model call that started ended, however it ended."""

    def tool_started(self, call: ToolCall) -> None:
        """A tool call really starts running."""


NO_HOOKS = Hooks()
"""The hooks of a loop that has none."""


class HookChain(Hooks):
    """Several hooks, each point called on each hook in the order given.

    `before_tool` stops at the first hook that answers the call with a result (the later
    ones are not asked); a rewritten call is what the next hook sees. `after_tool` gives
    each hook the result the previous one returned. `model_started` feeds the streamed text
    to every hook that wants it (None when none does, so nothing is streamed for nobody).
    """

    def __init__(self, *hooks: Hooks) -> None:
        self.hooks = hooks

    def before_model(self, messages: Sequence[Message]) -> None:
        for hook in self.hooks:
            hook.before_model(messages)

    def after_model(self, turn: AssistantTurn) -> None:
        for hook in self.hooks:
            hook.after_model(turn)

    def before_tool(self, call: ToolCall) -> ToolCall | ToolResult:
        for hook in self.hooks:
            decided = hook.before_tool(call)
            if isinstance(decided, ToolResult):
                return decided
            call = decided
        return call

    def after_tool(self, call: ToolCall, result: ToolResult) -> ToolResult:
        for hook in self.hooks:
            result = hook.after_tool(call, result)
        return result

    def on_finish(self, outcome: LoopOutcome) -> None:
        for hook in self.hooks:
            hook.on_finish(outcome)

    def model_started(self, think: int, attempt: int) -> TextSink | None:
        sinks = [s for h in self.hooks if (s := h.model_started(think, attempt)) is not None]
        if len(sinks) <= 1:
            return sinks[0] if sinks else None

        def fan_out(piece: str) -> None:
            for sink in sinks:
                sink(piece)

        return fan_out

    def model_ended(self) -> None:
        for hook in self.hooks:
            hook.model_ended()

    def tool_started(self, call: ToolCall) -> None:
        for hook in self.hooks:
            hook.tool_started(call)
