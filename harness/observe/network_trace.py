"""What a network run (`agent-network`) recorded, as `harness runs show` and the dashboard
show it: its shared state and each router decision.

The network writes the state after each agent as the value of a "state" step
(`{"state": ..., "refused": ...}`) and each decision as the value of a "route" step
(`{"next", "reason", "by"}`, `harness.agent.networks.decisions.Decision`); its output holds
the final state. Those journal shapes are read here only. Every text is redacted when read,
like the rest of a run's page.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.events import NETWORK_HANDLER
from harness.observe.child_runs import ChildRun
from harness.redaction import redact, redact_json
from harness.runtime.ledger import RunRecord

STATE_CHARS = 20_000
"""How much of the state's pretty JSON a page shows."""


@dataclass(frozen=True)
class RouteDecision:
    """One router decision: the iteration (1 for the first), the agent it chose (None: stop),
    why, which router decided (rules, sequence, python, agent, limit; "" when the router
    failed) and the child run of the agent it chose ("" when none was started)."""

    iteration: int
    next: str | None
    reason: str
    by: str
    child: str = ""


@dataclass(frozen=True)
class NetworkTrace:
    """A network run's shared state (redacted JSON data; None before any is recorded), how
    many agents had ended when it was, and the router's decisions in order."""

    state: Any
    agents: int
    decisions: list[RouteDecision]

    @property
    def state_json(self) -> str:
        """The state as indented JSON, at most `STATE_CHARS` characters."""
        text = json.dumps(self.state, indent=2, sort_keys=True, ensure_ascii=False)
        return text if len(text) <= STATE_CHARS else text[:STATE_CHARS] + "\n..."


def network_trace(
    record: RunRecord, journal: Mapping[str, Mapping[str, Any]], children: Sequence[ChildRun] = ()
) -> NetworkTrace | None:
    """The trace of a network run, or None for a run of any other function. The state is
    the one after the latest agent; before the first agent ended, the run's output's (a
    network that stopped at once), else None. `children` link each decision to its agent's
    run (the network's "agent" step of that iteration)."""
    if record.function_id != NETWORK_HANDLER:
        return None
    states = _numbered(journal, "state")
    agents, state = 0, None
    if states:
        last = max(states)
        agents, state = last + 1, _field(states[last], "state")
    elif isinstance(record.result, dict) and "state" in record.result:
        state = record.result["state"]
    by_step = {child.step: child.id for child in children if not child.detached}
    decisions = [
        _decision(n, entry, by_step.get(f"agent:{n}", ""))
        for n, entry in sorted(_numbered(journal, "route").items())
    ]
    return NetworkTrace(state=redact_json(state), agents=agents, decisions=decisions)


def _numbered(journal: Mapping[str, Mapping[str, Any]], name: str) -> dict[int, Mapping[str, Any]]:
    """The entries of steps `name:<n>` by n."""
    found: dict[int, Mapping[str, Any]] = {}
    for key, entry in journal.items():
        step, _, n = key.partition(":")
        if step == name and n.isdigit():
            found[int(n)] = entry
    return found


def _field(entry: Mapping[str, Any], name: str) -> Any:
    value = entry.get("v")
    return value.get(name) if isinstance(value, dict) else None


def _decision(n: int, entry: Mapping[str, Any], child: str) -> RouteDecision:
    """The decision a "route" step recorded; a failed step stops the network, its error
    the reason (as `router.route` does)."""
    if "e" in entry:
        how = "the router failed" if entry.get("final") else "the router is retrying"
        return RouteDecision(n + 1, None, redact(f"{how}: {entry['e']}"), "", child)
    nxt = _field(entry, "next")
    return RouteDecision(
        iteration=n + 1,
        next=redact(str(nxt)) if nxt is not None else None,
        reason=redact(str(_field(entry, "reason") or "")),
        by=str(_field(entry, "by") or ""),
        child=child,
    )
