"""Delegation to named agents: the `delegate_to_<agent>` tools a turn offers, and how each runs.

    named = NamedDelegation(turn)
    named.specs()              # the tools this turn offers (the roster read in a durable step)
    named.handles(call.name)   # is it one of them?
    named.run(call)            # run it durably; every failure is an error result

Who may call whom: the chat's agent (a turn offered `delegate_task`) every named agent; a
named agent those of its `delegates` that exist; an anonymous sub-agent nobody. Which agents
exist is read once per run, in a durable step ("roster"), so a replay offers what the first
execution offered. A synchronous call is a `step.invoke` of the sub-agent function (the worker
is free while the child works; a crash resumes the child, and the parent gets one answer); a
background call is a `step.start`, whose task id is the child's run id
(`harness.agent.background_tasks` checks, waits for and cancels it). What the children spent
is added up in `children_cost_usd`.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from harness.agent.background_tasks import BackgroundTasks
from harness.agent.compaction import render_for_summary
from harness.agent.delegation import (
    DELEGATE_TIMEOUT,
    SUBAGENT_FUNCTION,
    TASK_TOOL_DESCRIPTIONS,
    TASK_TOOLS,
    TASK_WAIT,
    DelegateToParams,
    TaskIdParams,
    TaskWaitParams,
)
from harness.agent.roster.load import load_roster
from harness.agent.untrusted import new_id, wrap
from harness.errors import StepFailedError
from harness.events import SubagentTask
from harness.llm.types import ToolCall, ToolResult, ToolSpec

if TYPE_CHECKING:
    from harness.agent.roster.load import Roster
    from harness.agent.roster.profile import AgentProfile
    from harness.agent.turn import DurableTurn
    from harness.tools.base import ToolRegistry

MAX_DEPTH = 4
"""How deep named delegations may nest (a ring of agents that call each other stops here)."""
HISTORY_MESSAGES = 30
HISTORY_CHARS = 20_000
"""`history="full"` gives the child at most this much of the latest messages."""


class NamedDelegation:
    """The named agents one turn may delegate to, and the calls to them. `depth` is how many
    named delegations led to this turn's run."""

    def __init__(
        self, turn: DurableTurn, depth: int = 0, agents: dict[str, str] | None = None
    ) -> None:
        """`agents`: the agents it may call as a step of the run already read them (the chat
        turn's "route"); None to read them when first needed, in a step of their own."""
        self.turn = turn
        self.depth = depth
        self.prefix = turn.deps.settings.agent_delegate_prefix
        self.children_cost_usd = 0.0
        """What the children this run waited for or saw finish cost (their own children's
        included), by the price table."""
        self.tasks = BackgroundTasks(turn, self)
        self._agents = agents
        self._counted: set[str] = set()

    # -- what is offered ---------------------------------------------------------------
    def agents(self) -> dict[str, str]:
        """The agents this turn may delegate to (name: description), read once per run."""
        if self._agents is None:
            self._agents = self._read_agents()
        return self._agents

    def _read_agents(self) -> dict[str, str]:
        turn = self.turn
        wanted = agents_wanted(turn.profile, turn.registry, self.depth)
        if wanted == ():
            return {}
        workspace, me = turn.deps.workspace, turn.profile.name
        agents: dict[str, str] = turn.ctx.step.run(
            "roster", lambda: agents_found(load_roster(workspace), wanted, me)
        )
        return agents

    def specs(self) -> list[ToolSpec]:
        """`delegate_to_<agent>` for each agent this turn may call, then the task tools;
        none when it may call nobody."""
        agents = self.agents()
        if not agents:
            return []
        named = [
            ToolSpec(
                name=f"{self.prefix}{name}",
                description=description,
                parameters=_schema(DelegateToParams),
            )
            for name, description in agents.items()
        ]
        tasks = [
            ToolSpec(
                name=name,
                description=TASK_TOOL_DESCRIPTIONS[name],
                parameters=_schema(_TASK_PARAMS[name]),
            )
            for name in sorted(TASK_TOOLS)
        ]
        return named + tasks

    def prompt_list(self) -> str:
        """The named agents for the system prompt's Delegation section ("" when none)."""
        agents = self.agents()
        if not agents:
            return ""
        lines = [f"- `{self.prefix}{name}`: {text}" for name, text in agents.items()]
        return (
            "Named agents you can hand a task to (the answer comes back to you; with "
            "`background` you get a task id for `task_status`, `task_wait`, `task_cancel`):\n"
            + "\n".join(lines)
        )

    def handles(self, name: str) -> bool:
        """True for a tool this module runs (whether or not this turn offers it)."""
        return name in TASK_TOOLS or name.startswith(self.prefix)

    # -- running a call ----------------------------------------------------------------
    def run(self, call: ToolCall) -> ToolResult:
        """Run a `delegate_to_<agent>` or task tool call durably. Must not raise for a bad
        call: every failure is an error result for the model."""
        agents = self.agents()
        if call.name in TASK_TOOLS:
            if not agents:
                return _error(call, f"{call.name} is not available to this agent")
            return self.tasks.run(call)
        name = call.name.removeprefix(self.prefix)
        if name not in agents:
            return _error(call, f"this agent may not delegate to {name!r}")
        try:
            params = DelegateToParams.model_validate(call.arguments)
        except ValidationError as exc:
            return _error(call, f"invalid arguments for {call.name}: {exc.errors()[0]['msg']}")
        turn = self.turn
        task = SubagentTask(
            task=_with_context(params.task, self._history(params.history)),
            agent=name,
            ask_in=turn.ask_in,
            background=params.background,
            parent_session=turn.session_key,
            depth=self.depth + 1,
        )
        data = task.model_dump(mode="json", exclude_none=True)
        if params.background:
            task_id = turn.ctx.step.start("delegate", SUBAGENT_FUNCTION, data)
            return ToolResult(
                tool_call_id=call.id,
                content=f"Started {name} in the background as task {task_id}. Check it with "
                "task_status, wait for its answer with task_wait, stop it with task_cancel.",
            )
        try:
            result = turn.ctx.step.invoke(
                "delegate", SUBAGENT_FUNCTION, data, timeout=DELEGATE_TIMEOUT
            )
        except StepFailedError as exc:
            return _error(call, f"the agent {name} failed: {exc.error}")
        self.count_cost(None, result)
        return ToolResult(
            tool_call_id=call.id,
            content=self.answer(str(result.get("answer", "")), result.get("read_outside")),
        )

    def answer(self, text: str, read_outside: object) -> str:
        """A child's answer as this turn reads it: wrapped when the child read outside
        content (and the turn tainted), else as is."""
        step = self.turn.ctx.step
        return self.turn.taint.subagent_answer(
            text, read_outside, lambda: step.run("untrusted-id", new_id)
        )

    def count_cost(self, task_id: str | None, result: Any) -> None:
        """Add a child's spend (its `cost_usd` and `children_cost_usd`) once per task id."""
        if task_id is not None:
            if task_id in self._counted:
                return
            self._counted.add(task_id)
        if isinstance(result, dict):
            for key in ("cost_usd", "children_cost_usd"):
                value = result.get(key)
                if isinstance(value, int | float):
                    self.children_cost_usd += float(value)

    def _history(self, mode: str) -> str:
        """What of this conversation the child gets, decided in a durable step."""
        turn = self.turn
        if mode == "none" or not turn.session_key:
            return ""
        store, key = turn.sessions, turn.session_key

        def recent() -> str:
            text = render_for_summary(store.messages(key)[-HISTORY_MESSAGES:])
            return text[-HISTORY_CHARS:]

        text: str = turn.ctx.step.run("delegate-history", recent)
        if mode != "full":  # behind the budget guard: none when a budget is used up
            text = turn.summarize(text, "delegate-summary") or "" if text else ""
        if not text or not turn.taint.source:
            return text
        # the turn has read outside content, so its history may carry some: the child gets it
        # as such, and its own risky calls ask as the parent's would
        source = f"this conversation, which holds {turn.taint.source}"
        return wrap(text, source, turn.ctx.step.run("untrusted-id", new_id))


_TASK_PARAMS: dict[str, type[BaseModel]] = {
    name: TaskWaitParams if name == TASK_WAIT else TaskIdParams for name in TASK_TOOLS
}


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    """A fresh copy of `model`'s JSON Schema (the caller may change it), generated once."""
    schema: dict[str, Any] = json.loads(_schema_text(model))
    return schema


@functools.cache
def _schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def _with_context(task: str, context: str) -> str:
    if not context:
        return task
    return f"The conversation so far, for context:\n\n{context}\n\nYour task:\n\n{task}"


def _error(call: ToolCall, text: str) -> ToolResult:
    return ToolResult(tool_call_id=call.id, content=text, is_error=True)


__all__ = ["MAX_DEPTH", "NamedDelegation"]


def agents_wanted(
    profile: AgentProfile, registry: ToolRegistry, depth: int
) -> tuple[str, ...] | None:
    """The named agents a turn of `profile` offered `registry`, `depth` named delegations
    deep, may call: a named agent its `delegates`; the chat's agent (offered `delegate_task`)
    every one (None); an anonymous sub-agent, or a turn `MAX_DEPTH` deep, none (`()`)."""
    if depth >= MAX_DEPTH:
        return ()
    if profile.spec is not None:
        return profile.spec.delegates
    return None if registry.get("delegate_task") is not None else ()


def agents_found(roster: Roster, wanted: tuple[str, ...] | None, me: str) -> dict[str, str]:
    """Name: description of each agent of `wanted` (None: every one) that `roster` holds,
    agent `me` left out."""
    names = roster.names() if wanted is None else wanted
    found = {name: roster.get(name) for name in names if name != me}
    return {name: agent.description for name, agent in found.items() if agent}
