"""What `harness runs` shows of a run and its steps, read from the ledger's records.

`run_view` and `step_views` are the only functions that know the ledger's record shapes (the
typed `RunRecord`, journal entries as `{"k": kind, "v"|"e": ..., "n", "s", "t"}`), so a change
of either touches these two and nothing in the rendering. Text a run recorded (its error) is
redacted here, when it is shown: records written before a secret was registered, or by a
process that did not know it, show no more than new ones. Shared by `harness runs`, the
dashboard and the agent's `runs_show` tool; `resolve_run_id` finds a run by an id prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.errors import RunNotFoundError
from harness.redaction import redact
from harness.runtime.instance import Runtime
from harness.runtime.ledger import RunRecord

SUSPENDED = frozenset({"sleeping", "waiting"})


@dataclass(frozen=True)
class RunView:
    """One run as `harness runs` shows it. Times are ms since the epoch; 0 means not yet."""

    id: str
    function_id: str
    status: str
    attempt: int
    created_ms: int
    started_ms: int
    ended_ms: int
    error: str
    wake_kind: str = ""
    wake_step: str = ""
    wake_since_ms: int = 0


@dataclass(frozen=True)
class StepView:
    """One step of a run's timeline. `status` is completed, failed, retrying, timed out or the
    run's own status for the step it is suspended in; times are ms (0: not recorded)."""

    key: str
    kind: str
    status: str
    attempts: int
    started_ms: int
    ended_ms: int

    @property
    def duration_ms(self) -> int | None:
        """How long the step took, or None when either end is unknown."""
        if self.started_ms and self.ended_ms:
            return max(0, self.ended_ms - self.started_ms)
        return None


def _ms(value: Any) -> int:
    try:
        return int(float(value)) if value not in (None, "") else 0
    except (TypeError, ValueError):
        return 0


def run_view(record: RunRecord) -> RunView:
    """A `RunView` of the ledger's record of a run, its error redacted."""
    return RunView(
        id=record.id,
        function_id=record.function_id,
        status=record.status,
        attempt=record.attempt,
        created_ms=record.created_at,
        started_ms=record.started_at,
        ended_ms=record.ended_at,
        error=redact(record.error),
        wake_kind=record.wake_kind,
        wake_step=record.wake_step,
        wake_since_ms=record.wake_since,
    )


def _status(entry: Mapping[str, Any]) -> str:
    if "e" in entry:
        return "failed" if entry.get("final") else "retrying"
    if entry.get("k") == "wait" and entry.get("v") is None:
        return "timed out"
    return "completed"


def step_views(run: RunView, journal: Mapping[str, Mapping[str, Any]]) -> list[StepView]:
    """The run's steps in the order they ended (journal order for records without times),
    followed by the step the run is suspended in, if any."""
    steps = [
        StepView(
            key=key,
            kind=str(entry.get("k", "")),
            status=_status(entry),
            attempts=_ms(entry.get("n")) or 1,
            started_ms=_ms(entry.get("s")),
            ended_ms=_ms(entry.get("t")),
        )
        for key, entry in journal.items()
    ]
    order = {step.key: index for index, step in enumerate(steps)}
    steps.sort(key=lambda step: (step.ended_ms or float("inf"), order[step.key]))
    if run.status in SUSPENDED and run.wake_step and run.wake_step not in journal:
        steps.append(StepView(run.wake_step, run.wake_kind, run.status, 1, run.wake_since_ms, 0))
    return steps


def resolve_run_id(runtime: Runtime, prefix: str) -> str:
    """The one retained run whose id starts with `prefix`. Raises `RunNotFoundError` when none
    does, or when several do (naming up to five of them)."""
    found = runtime.ledger.runs_starting_with(prefix, limit=6)
    if len(found) == 1:
        return found[0]
    if not found:
        raise RunNotFoundError(
            f"no run starts with {prefix!r} (unknown, or older than the retention period)"
        )
    more = ", ..." if len(found) > 5 else ""
    raise RunNotFoundError(
        f"{prefix!r} matches several runs: {', '.join(found[:5])}{more}; give more of the id"
    )
