"""Delegating work to sub-agents: the three tools the model sees, and how each runs durably.

The tools are declared like any other (pydantic parameters, generated schemas), but the
agent's turn runs them itself: a synchronous delegation is a `step.invoke` of the sub-agent
function, so it survives crashes and frees the worker while the sub-agent works.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from harness.events import SUBAGENT_SPAWN
from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError

SUBAGENT_FUNCTION = "agent-sub-agent"
SUBAGENT_EVENT = SUBAGENT_SPAWN


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
