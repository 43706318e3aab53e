"""What a router decides, and the declarative routers' decisions (rules, sequence), pure.

A decision is the next agent (or None: stop) and the reason, recorded in the network run's
journal as one step per decision (`router.route`). Rules read the shared state and the last
result only: the same inputs always give the same decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from harness.agent.networks.spec import (
    FIRST,
    HAND_OVER,
    STOP,
    Condition,
    Rule,
    RulesRouter,
    SequenceRouter,
)

DecidedBy = Literal["rules", "sequence", "python", "function", "agent", "limit"]


class AgentResult(BaseModel):
    """What one agent of the network answered (`failed`: its run failed; `answer` says how)."""

    model_config = ConfigDict(frozen=True)

    agent: str
    answer: str
    failed: bool = False

    @property
    def empty(self) -> bool:
        """True when it answered nothing (or failed)."""
        return self.failed or not self.answer.strip()


class Decision(BaseModel):
    """The next agent, or None to stop; why; and which router decided."""

    model_config = ConfigDict(frozen=True)

    next: str | None
    reason: str
    by: DecidedBy


class HandOver(BaseModel):
    """A rule said `then: agent`: the routing agent decides; `reason` is the rule's."""

    model_config = ConfigDict(frozen=True)

    reason: str


def by_sequence(router: SequenceRouter, iteration: int) -> Decision:
    """The `iteration`-th agent of the order (0-based), then stop."""
    if iteration < len(router.order):
        name = router.order[iteration]
        return Decision(next=name, reason=f"step {iteration + 1} of the sequence", by="sequence")
    return Decision(next=None, reason="the sequence is done", by="sequence")


def by_rules(
    router: RulesRouter,
    state: Mapping[str, Any],
    results: Sequence[AgentResult],
    iteration: int,
) -> Decision | HandOver:
    """The first rule whose conditions hold decides; none holding stops. `then: agent` is a
    `HandOver` to the routing agent."""
    last = results[-1] if results else None
    for index, rule in enumerate(router.rules):
        if all(_holds(c, state, last, iteration) for c in rule.conditions()):
            reason = rule.reason or f"rule {index + 1}: {_describe(rule)}"
            if rule.then == HAND_OVER:
                return HandOver(reason=reason)
            target = None if rule.then == STOP else rule.then
            return Decision(next=target, reason=reason, by="rules")
    return Decision(next=None, reason="no rule matched", by="rules")


_MISSING = object()


def lookup(state: Mapping[str, Any], key: str) -> Any:
    """The value at `key` (dotted: into nested objects), or a sentinel when it is not set."""
    value: Any = state
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _holds(
    condition: Condition, state: Mapping[str, Any], last: AgentResult | None, iteration: int
) -> bool:
    if condition.last_agent is not None:
        ran = last.agent if last is not None else FIRST
        if ran != condition.last_agent:
            return False
    if condition.last_empty is not None and (last is not None and last.empty) != (
        condition.last_empty
    ):
        return False
    if condition.iteration_at_least is not None and iteration < condition.iteration_at_least:
        return False
    return condition.state is None or _state_test(condition, lookup(state, condition.state))


def _state_test(condition: Condition, value: Any) -> bool:
    test = condition.test
    if test == "missing":
        return (value is _MISSING) == condition.missing
    if test == "truthy":
        return (value is not _MISSING and bool(value)) == condition.truthy
    if value is _MISSING:
        return test == "not_equals"
    if test == "equals":
        return _same(value, condition.equals)
    if test == "not_equals":
        return not _same(value, condition.not_equals)
    if test == "in_":
        return any(_same(value, option) for option in condition.in_ or ())
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    if test == "at_least":
        return condition.at_least is not None and value >= condition.at_least
    return condition.at_most is not None and value <= condition.at_most


def _same(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`."""
    return isinstance(a, bool) == isinstance(b, bool) and bool(a == b)


def _describe(rule: Rule) -> str:
    parts = []
    for c in rule.conditions():
        shown = c.model_dump(by_alias=True, exclude_unset=True)
        parts.append(", ".join(f"{k}={v!r}" for k, v in shown.items()))
    when = " and ".join(parts) if parts else "always"
    return f"{when} -> {rule.then}"
