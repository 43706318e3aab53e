"""The think / act / observe loop, as a plain function.

Everything with side effects comes in as a callable, so the loop runs the same under the
durable runtime (where each callable is a step) and in a test with a scripted model. What
happens around each model and tool call (approval, taint, streaming, the status line) comes
in as `hooks` (`harness.agent.hooks`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.agent.hooks import NO_HOOKS, Hooks
from harness.agent.media.image_pruning import prune_images
from harness.agent.pruning import prune_tool_results
from harness.agent.transcript import repair
from harness.llm.errors import ContextOverflowError
from harness.llm.types import AssistantTurn, Message, ToolCall, ToolResult, ToolSpec

Think = Callable[[Sequence[Message], Sequence[ToolSpec], str], AssistantTurn]
Act = Callable[[ToolCall], ToolResult]
ActAll = Callable[[Sequence[ToolCall]], list[ToolResult]]
Steer = Callable[[], list[Message]]
Record = Callable[[Message], None]
Transform = Callable[[list[Message]], list[Message]]
Compact = Callable[[list[Message], bool], list[Message]]

HALF_BUDGET_NOTE = (
    "You have used half of your iterations for this message ({used} of {limit}). "
    "Start wrapping up: finish the essential work and prepare your answer."
)
LAST_BUDGET_NOTE = (
    "You are almost out of iterations ({used} of {limit}). Give your final answer now; "
    "call a tool only if the answer is impossible without it."
)
FINAL_CALL_NOTE = "This is your last iteration: answer now, with what you have. Tools are off."


def budget_note(iteration: int, limit: int) -> str:
    """The warning for this think call ("" when none): at 50% and 85% of the budget, and a
    last-call note on the final iteration. Added to that call only, never persisted."""
    used = iteration + 1
    if used >= limit:
        return FINAL_CALL_NOTE
    if used >= limit * 0.85:
        return LAST_BUDGET_NOTE.format(used=used, limit=limit)
    if used >= limit * 0.5:
        return HALF_BUDGET_NOTE.format(used=used, limit=limit)
    return ""


def no_compaction(messages: list[Message], forced: bool) -> list[Message]:
    """The compaction hook for conversations that are never compacted."""
    return messages


def default_transform(messages: list[Message]) -> list[Message]:
    """What the model sees: a transcript repaired for the provider, old tool output and old
    images pruned."""
    return prune_images(prune_tool_results(repair(messages)))


@dataclass
class LoopOutcome:
    """How a loop ended. `text` is the answer for the user; `turns` every model turn."""

    text: str
    iterations: int
    hit_limit: bool = False
    turns: list[AssistantTurn] = field(default_factory=list)

    @property
    def cost_usd(self) -> float:
        """What the model calls cost, by the price table (0 for unknown models)."""
        return sum(t.cost_usd for t in self.turns)


def run_agent_loop(
    history: list[Message],
    tools: Sequence[ToolSpec] | Callable[[], Sequence[ToolSpec]],
    *,
    think: Think,
    act: Act,
    steer: Steer,
    record: Record,
    transform: Transform = default_transform,
    compact: Compact = no_compaction,
    hooks: Hooks = NO_HOOKS,
    max_iterations: int = 20,
    act_all: ActAll | None = None,
) -> LoopOutcome:
    """Think, act on the tool calls, feed the results back, until the model answers in text
    or `max_iterations` is reached (the last call is made without tools, so it must answer).

    `history` ends with the user's message. `tools` is a list, or a callable asked before
    each think (so a tool source whose list changed mid-turn, like an MCP server, is seen).
    Before each think, `steer()` supplies messages that arrived meanwhile; every message
    added to the conversation is passed to `record`.
    `think` gets the transformed conversation, the tools offered, and a budget note for that
    call only. `act` must not raise for a bad call: errors are results for the model.
    `compact(conversation, forced)` runs before each think (it decides whether the context
    is too large) and, forced, once when the model reports a context overflow; the call is
    then retried. A second overflow propagates.
    `hooks` are called around each think (`before_model` with what it is sent, each try
    included; `after_model`) and each tool call (`before_tool`, which may answer the call
    instead of `act`; `after_tool`), and `on_finish` when the loop returns.
    With `act_all`, the calls of one reply are a batch: `before_tool` for each in order
    first (approvals are asked before anything runs), then `act_all` runs those the hooks
    let through (it may run them at once) and returns their results in order, then
    `after_tool` for each in order. Without it, each call is hooked and run in turn.
    """
    conversation = list(history)
    outcome = LoopOutcome(text="", iterations=0)
    for iteration in range(max_iterations):
        for message in steer():
            conversation.append(message)
            record(message)
        last = iteration == max_iterations - 1
        note = budget_note(iteration, max_iterations)
        offered = () if last else (tools() if callable(tools) else tools)
        conversation = compact(conversation, False)
        try:
            turn = _think(think, hooks, transform(conversation), offered, note)
        except ContextOverflowError:
            conversation = compact(conversation, True)
            turn = _think(think, hooks, transform(conversation), offered, note)
        hooks.after_model(turn)
        outcome.turns.append(turn)
        outcome.iterations = iteration + 1
        reply = turn.to_message()
        if reply is not None:
            conversation.append(reply)
            record(reply)
        if not turn.tool_calls:
            outcome.text = turn.text.strip() or "(The model returned an empty answer.)"
            hooks.on_finish(outcome)
            return outcome
        if act_all is None:
            results = Message.tool(*(_act(act, hooks, call) for call in turn.tool_calls))
        else:
            results = Message.tool(*_act_all(act_all, hooks, turn.tool_calls))
        conversation.append(results)
        record(results)
    outcome.hit_limit = True
    outcome.text = f"(Stopped after {max_iterations} iterations without a final answer.)"
    hooks.on_finish(outcome)
    return outcome


def _think(
    think: Think, hooks: Hooks, messages: list[Message], tools: Sequence[ToolSpec], note: str
) -> AssistantTurn:
    hooks.before_model(messages)
    return think(messages, tools, note)


def _act(act: Act, hooks: Hooks, call: ToolCall) -> ToolResult:
    """One tool call: answered by a hook, or run by `act`; then the hooks see its result."""
    decided = hooks.before_tool(call)
    result = decided if isinstance(decided, ToolResult) else act(decided)
    return hooks.after_tool(decided if isinstance(decided, ToolCall) else call, result)


def _act_all(act_all: ActAll, hooks: Hooks, calls: Sequence[ToolCall]) -> list[ToolResult]:
    """The calls of one reply as a batch: all decided, the ones let through run together,
    then the hooks see each result (in call order throughout)."""
    decided = [hooks.before_tool(call) for call in calls]
    ran = iter(act_all([d for d in decided if isinstance(d, ToolCall)]))
    results = [d if isinstance(d, ToolResult) else next(ran) for d in decided]
    return [
        hooks.after_tool(d if isinstance(d, ToolCall) else call, result)
        for call, d, result in zip(calls, decided, results, strict=True)
    ]
