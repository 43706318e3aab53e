"""Which runs a run started (`step.invoke`, `step.start`), as `harness runs show` and the
dashboard list them, and what they spent.

The run index keeps each child under its parent (`keys.runs_of_parent`), so finding them is
one read of that index, however old the parent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.runtime.instance import Runtime
from harness.runtime.ledger import RunRecord

MAX_CHILDREN = 200
"""How many child runs are listed (the newest)."""


@dataclass(frozen=True)
class ChildRun:
    """A run started by another: its id, function and status, the parent's step that started
    it, and whether the parent went on without waiting for it (`detached`, `step.start`)."""

    id: str
    function_id: str
    status: str
    step: str
    detached: bool

    @property
    def started_by(self) -> str:
        """`<step> (waited)` or `<step> (detached)`; empty when no step is recorded."""
        if not self.step:
            return ""
        return f"{self.step} ({'detached' if self.detached else 'waited'})"


def child_run(record: RunRecord) -> ChildRun:
    """The `ChildRun` of a child's record (a record without a parent gets an empty step)."""
    parent = record.parent
    return ChildRun(
        id=record.id,
        function_id=record.function_id,
        status=record.status,
        step=parent.step if parent else "",
        detached=bool(parent and parent.detached),
    )


def child_runs(runtime: Runtime, run_id: str, limit: int = MAX_CHILDREN) -> list[ChildRun]:
    """The runs `run_id` started, at most `limit` (the newest), in the order they were
    created; empty when it started none or they have expired."""
    ids = runtime.run_index.newest(runtime.keys.runs_of_parent(run_id), 0, 0, limit)
    return [child_run(record) for record in reversed(runtime.run_index.records(ids))]


def children_cost_usd(result: Any) -> float | None:
    """What a run's children spent on model calls, from its output's `children_cost_usd`
    (named delegation writes it); None when the output has none."""
    spent = result.get("children_cost_usd") if isinstance(result, dict) else None
    if isinstance(spent, bool) or not isinstance(spent, int | float):
        return None
    return float(spent)
