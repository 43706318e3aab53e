"""How a background task's ending is told: `agent.task.finished`, published exactly once for
every ending of a background sub-agent (`SubagentTask.background`).

A child that completes publishes it itself, as its last step (`task_finished`). A child that
fails (any error, once its retries are spent) or is cancelled cannot: the engine publishes
`function.failed` or `function.cancelled` for it instead, and `agent-task-ended` turns that
into `agent.task.finished` with the status and the error. A run ends once, and the engine
publishes each of those events once per run, so each ending is told once.

A child that failed or was cancelled spent too, and its parent counts it as a completed
child's (`cost_usd`): `spent_usd` reads it back from the ledger, the usage each model step
recorded in the run's journal (`u`: model and tokens, `Step.run`), of the child and of the
runs it started in turn, priced by the list prices (an unpriced model counts 0, as
`LoopOutcome.cost_usd` counts it for a completed child). A call that failed recorded no usage
and counts nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from harness.agent.delegation import SUBAGENT_FUNCTION
from harness.events import (
    FUNCTION_CANCELLED,
    FUNCTION_FAILED,
    FunctionCancelled,
    FunctionFailed,
    SubagentTask,
    TaskFinished,
)
from harness.observe.child_runs import child_runs
from harness.observe.step_details import model_usage
from harness.runtime import Context, Runtime, event, function

TASK_ENDED_FUNCTION = "agent-task-ended"
SPENT_DEPTH = 3
"""How many generations of runs (the child, its children, theirs) `spent_usd` adds up."""
_BACKGROUND_CHILD = (
    f"event.data.function_id == '{SUBAGENT_FUNCTION}' and event.data.event.data.background"
)


def task_finished(
    ctx: Context, data: SubagentTask, *, answer: str, cost: float, read_outside: str | None
) -> None:
    """Publish, in a durable step of the child's run, that background task `ctx.run_id`
    completed with `answer`; `cost` is its spend, its own delegations' included."""
    finished = TaskFinished(
        run_id=ctx.run_id, agent=data.agent or "", status="completed", answer=answer,
        cost_usd=cost, read_outside=read_outside,
    )  # fmt: skip
    ctx.step.send_event("task-finished", finished.to_event())


@function(
    id=TASK_ENDED_FUNCTION,
    trigger=[
        event(FUNCTION_FAILED, if_=_BACKGROUND_CHILD),
        event(FUNCTION_CANCELLED, if_=_BACKGROUND_CHILD),
    ],
    retries=3,
)
def task_ended(ctx: Context) -> dict[str, Any]:
    """Tell that a background sub-agent failed or was cancelled: `agent.task.finished` with
    `status` and `error` (a failure's error, or the cancel's reason), and `cost_usd`, what
    it spent before it ended (`spent_usd`)."""
    status: Literal["failed", "cancelled"]
    if ctx.event.name == FUNCTION_FAILED:
        failed = FunctionFailed.from_event(ctx.event)
        run_id, child_event, status, error = failed.run_id, failed.event, "failed", failed.error
    else:
        cancelled = FunctionCancelled.from_event(ctx.event)
        run_id, child_event, status = cancelled.run_id, cancelled.event, "cancelled"
        error = f"cancelled: {cancelled.reason}" if cancelled.reason else "cancelled"
    agent = child_event.get("data", {}).get("agent") or ""
    cost = float(ctx.step.run("cost", lambda: spent_usd(ctx.runtime, run_id)))
    finished = TaskFinished(
        run_id=run_id, agent=str(agent), status=status, error=error, cost_usd=cost
    )
    ctx.step.send_event("task-finished", finished.to_event())
    return {"run_id": run_id, "status": status}


def spent_usd(runtime: Runtime, run_id: str) -> float:
    """What run `run_id` and the runs it started (`SPENT_DEPTH` generations) spent on model
    calls, from the usage their model steps recorded (see the module). Never counts a call
    twice: each run's own steps only."""
    total, runs = 0.0, [run_id]
    for _ in range(SPENT_DEPTH):
        for rid in runs:
            for entry in runtime.ledger.journal(rid).values():
                usage = entry.get("u")
                if isinstance(usage, Mapping):
                    total += model_usage(usage).cost_usd or 0.0
        runs = [child.id for rid in runs for child in child_runs(runtime, rid)]
    return round(total, 6)


__all__ = ["TASK_ENDED_FUNCTION", "spent_usd", "task_ended", "task_finished"]
