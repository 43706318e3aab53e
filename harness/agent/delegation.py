"""Delegating work to sub-agents: the tools the model sees, and their arguments.

The three anonymous ones (`delegate_task`, `delegate_async_task`, `delegate_scheduled_task`)
are declared like any other tool (pydantic parameters, generated schemas); the named ones
(`delegate_to_<agent>`) and the background task tools (`task_status`, `task_wait`,
`task_cancel`) are generated per turn from the roster (`harness.agent.named_delegation`).
The agent's turn runs all of them itself: a synchronous delegation is a `step.invoke` of the
sub-agent function, so it survives crashes and frees the worker while the sub-agent works.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, field_validator

from harness.events import SUBAGENT_HANDLER, SUBAGENT_SPAWN
from harness.runtime.durations import wait_limit
from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError

SUBAGENT_FUNCTION = SUBAGENT_HANDLER
SUBAGENT_EVENT = SUBAGENT_SPAWN
DELEGATE_TIMEOUT = "30m"
"""How long a synchronous delegation waits for the sub-agent's answer."""


class DelegateTaskParams(ToolParams):
    """Arguments of `delegate_task` and `delegate_async_task`."""

    task: str = Field(
        min_length=1,
        max_length=20_000,
        description="What the sub-agent must do, with all the context it needs.",
    )


class DelegateScheduledParams(DelegateTaskParams):
    """Arguments of `delegate_scheduled_task`."""

    scheduled_for: str = Field(
        description="When to start, ISO 8601 with a UTC offset, e.g. 2026-12-01T09:00:00+01:00."
    )


class _Delegation(Tool[DelegateTaskParams]):
    parameters = DelegateTaskParams

    def run(self, params: DelegateTaskParams, ctx: ToolContext) -> str:
        raise ToolError(f"{self.name} runs inside the agent's turn, not through the registry")


class DelegateTaskTool(_Delegation):
    """Run a sub-agent now and give its answer back as the tool result."""

    name = "delegate_task"
    description = (
        "Give a self-contained, multi-step task to a sub-agent and wait for its answer. Use when "
        "you need the result to continue. The sub-agent has the file tools, remember and web_fetch."
    )


class DelegateAsyncTaskTool(_Delegation):
    """Start a sub-agent in the background; it replies to the user itself."""

    name = "delegate_async_task"
    description = (
        "Start a sub-agent in the background for work the user does not need to wait for. It "
        "sends its result to the user itself when done; you get only a confirmation."
    )


class DelegateScheduledTaskTool(Tool[DelegateScheduledParams]):
    """Start a sub-agent at a given time; it replies to the user itself."""

    name = "delegate_scheduled_task"
    description = (
        'Schedule a sub-agent to do a task later ("remind me at 9", "check tomorrow"). It runs '
        "at `scheduled_for` and sends its result to the user itself."
    )
    parameters = DelegateScheduledParams

    def run(self, params: DelegateScheduledParams, ctx: ToolContext) -> str:
        raise ToolError(f"{self.name} runs inside the agent's turn, not through the registry")


DELEGATION_TOOLS = frozenset({"delegate_task", "delegate_async_task", "delegate_scheduled_task"})
TASK_STATUS, TASK_WAIT, TASK_CANCEL = "task_status", "task_wait", "task_cancel"
TASK_TOOLS = frozenset({TASK_STATUS, TASK_WAIT, TASK_CANCEL})


class DelegateToParams(ToolParams):
    """Arguments of `delegate_to_<agent>`."""

    task: str = Field(
        min_length=1,
        max_length=20_000,
        description="What the agent must do, with all the context it needs.",
    )
    history: Literal["none", "summary", "full"] = Field(
        default="none",
        description="What of this conversation the agent gets: none, a short summary, or the "
        "recent transcript.",
    )
    background: bool = Field(
        default=False,
        description="Start it in the background and get a task id (check it with task_status, "
        "task_wait, task_cancel) instead of waiting for its answer.",
    )


class TaskIdParams(ToolParams):
    """Arguments of `task_status` and `task_cancel`."""

    task_id: str = Field(min_length=1, max_length=64, description="The id a delegation gave.")


class TaskWaitParams(TaskIdParams):
    """Arguments of `task_wait`."""

    timeout: str = Field(
        default="10m",
        description='How long to wait at most, e.g. "30s", "10m" (at most 1h).',
    )

    @field_validator("timeout")
    @classmethod
    def _a_duration(cls, value: str) -> str:
        return wait_limit(value, "1h")


TASK_TOOL_DESCRIPTIONS = {
    TASK_STATUS: "The state of a background task you started: running, completed (with its "
    "answer), failed or cancelled.",
    TASK_WAIT: "Wait for a background task you started to finish and get its answer; returns "
    "at once when it has already finished, or says it still runs after `timeout`.",
    TASK_CANCEL: "Stop a background task you started.",
}


def parse_schedule(value: str, now: datetime) -> datetime:
    """The start time of a scheduled delegation. Raises `ToolError` for a time that is not
    ISO 8601, has no UTC offset, or is not in the future."""
    try:
        when = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ToolError(f"scheduled_for {value!r} is not an ISO 8601 time") from exc
    if when.tzinfo is None:
        raise ToolError(f"scheduled_for {value!r} needs a UTC offset, e.g. +00:00")
    if when <= now:
        raise ToolError(f"scheduled_for {value!r} is not in the future (now {now.isoformat()})")
    return when
