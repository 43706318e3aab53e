"""The workspace's observe-only lifecycle hooks: `hook-on-start`, `hook-before-model`,
`hook-after-model` and `hook-on-finish`, functions of `functions/` the sidecar serves.

A turn never waits on them and they change nothing: each point STARTS the function as a
detached child of the run (`ctx.step.start`, one durable step per point reached), so a replay
after a crash or a wait starts nothing again, and the turn goes on at once. What each is given
(`ctx.event.data` in the function) is a small summary, never the conversation whole, with
known secret shapes masked (`harness.redaction.redact`):

- `hook-on-start`: `run_id`, `function_id`, `agent`, `channel`;
- `hook-before-model`: `run_id`, `agent`, `iteration` (the turn's model calls, from 1),
  `messages` (how many), `last` (`role` and the first `TEXT_CHARS` of its text);
- `hook-after-model`: `run_id`, `agent`, `iteration`, `model`, `stop_reason`, `text`
  (capped), `tool_calls` (names only), `usage` (the call's token counts);
- `hook-on-finish`: `run_id`, `agent`, `iterations`, `hit_limit`, `text` (the answer,
  capped), `usage` (summed over the loop), `cost_usd`. A chat turn that waits on an approval
  and goes on ends its loop more than once: one start each time.

A hook the sidecar stopped serving after the run read the list (`served_hooks`) is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from harness.agent.hooks import Hooks
from harness.errors import FunctionNotFoundError
from harness.llm.types import AssistantTurn, Message, Usage
from harness.redaction import redact

if TYPE_CHECKING:  # only the types: the loop imports `hooks`, not this module
    from harness.agent.loop import LoopOutcome
    from harness.runtime.steps import Context

HOOK_ON_START = "hook-on-start"
HOOK_BEFORE_MODEL = "hook-before-model"
HOOK_AFTER_MODEL = "hook-after-model"
HOOK_ON_FINISH = "hook-on-finish"
OBSERVER_IDS = (HOOK_ON_START, HOOK_BEFORE_MODEL, HOOK_AFTER_MODEL, HOOK_ON_FINISH)
"""The ids of the observe-only hook functions, in the order a turn reaches them."""
TEXT_CHARS = 2_000


class WorkspaceObservers(Hooks):
    """Starts the served observe-only hooks at their points (see the module); `hook-on-start`
    at once, when made. Never raises for a hook's fault."""

    def __init__(self, ctx: Context, agent: str, channel: str, served: Iterable[str]) -> None:
        self.ctx = ctx
        self.agent = agent
        self.served = frozenset(served) & set(OBSERVER_IDS)
        self.iteration = 0  # counts model calls: a replay reaches them in the same order
        self._start(HOOK_ON_START, {"function_id": ctx.function_id, "channel": channel})

    def before_model(self, messages: Sequence[Message]) -> None:
        self.iteration += 1
        last = {"role": messages[-1].role, "text": _capped(messages[-1].text)} if messages else None
        self._start(
            HOOK_BEFORE_MODEL,
            {"iteration": self.iteration, "messages": len(messages), "last": last},
        )

    def after_model(self, turn: AssistantTurn) -> None:
        self._start(
            HOOK_AFTER_MODEL,
            {
                "iteration": self.iteration, "model": turn.model, "stop_reason": turn.stop_reason,
                "text": _capped(turn.text), "tool_calls": [c.name for c in turn.tool_calls],
                "usage": turn.usage.model_dump(),
            },
        )  # fmt: skip

    def on_finish(self, outcome: LoopOutcome) -> None:
        self._start(
            HOOK_ON_FINISH,
            {
                "iterations": outcome.iterations, "hit_limit": outcome.hit_limit,
                "text": _capped(outcome.text), "usage": _summed(t.usage for t in outcome.turns),
                "cost_usd": outcome.cost_usd,
            },
        )  # fmt: skip

    def _start(self, hook: str, data: dict[str, Any]) -> None:
        """Start `hook` with `data` (plus the run and the agent) unless it is not served."""
        if hook not in self.served:
            return
        about = {"run_id": self.ctx.run_id, "agent": self.agent, **data}
        try:
            self.ctx.step.start(hook, hook, about)
        except FunctionNotFoundError:
            pass  # the file was removed since the run read the list: nothing to tell


def _capped(text: str) -> str:
    return redact(text[:TEXT_CHARS])


def _summed(usages: Iterable[Usage]) -> dict[str, int]:
    total: dict[str, int] = dict.fromkeys(Usage.model_fields, 0)
    for usage in usages:
        for name, value in usage.model_dump().items():
            total[name] += value
    return total
