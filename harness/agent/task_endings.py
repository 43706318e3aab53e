"""How a background task's ending is told: `agent.task.finished`, published exactly once for
every ending of a background sub-agent (`SubagentTask.background`).

A child that completes publishes it itself, as its last step (`task_finished`). A child that
fails (any error, once its retries are spent) or is cancelled cannot: the engine publishes
`function.failed` or `function.cancelled` for it instead, and `agent-task-ended` turns that
into `agent.task.finished` with the status and the error. A run ends once, and the engine
publishes each of those events once per run, so each ending is told once.
"""

from __future__ import annotations

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
from harness.runtime import Context, event, function

TASK_ENDED_FUNCTION = "agent-task-ended"
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
    `status` and `error` (a failure's error, or the cancel's reason)."""
    status: Literal["failed", "cancelled"]
    if ctx.event.name == FUNCTION_FAILED:
        failed = FunctionFailed.from_event(ctx.event)
        run_id, child_event, status, error = failed.run_id, failed.event, "failed", failed.error
    else:
        cancelled = FunctionCancelled.from_event(ctx.event)
        run_id, child_event, status = cancelled.run_id, cancelled.event, "cancelled"
        error = f"cancelled: {cancelled.reason}" if cancelled.reason else "cancelled"
    agent = child_event.get("data", {}).get("agent") or ""
    finished = TaskFinished(run_id=run_id, agent=str(agent), status=status, error=error)
    ctx.step.send_event("task-finished", finished.to_event())
    return {"run_id": run_id, "status": status}


__all__ = ["TASK_ENDED_FUNCTION", "task_ended", "task_finished"]
