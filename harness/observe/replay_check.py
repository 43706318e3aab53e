"""`harness runs replay RUN`: is a finished run's output what its code produces today?

`check_replay` replays the run (`harness.runtime.replay`) from a copy of its journal and
compares what the handler ends with to what the run recorded: the result of a completed run,
the error of a failed one. Identical, or a unified diff of the two as indented JSON, or the
first step where the code went another way than the journal.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from harness.errors import FunctionNotFoundError, RunNotFoundError
from harness.runtime.instance import Runtime
from harness.runtime.ledger import RunRecord
from harness.runtime.replay import replay

REPLAYABLE = ("completed", "failed")


@dataclass(frozen=True)
class ReplayCheck:
    """The verdict: `identical`, else `diff` (lines) and, when the code took another path,
    `first_difference` (the step key) and `reason`. `unused` lists the journal's steps the
    replay never asked for (a shorter path is a difference too, even with the same output)."""

    run_id: str
    function_id: str
    identical: bool
    recorded: dict[str, Any]
    replayed: dict[str, Any]
    diff: tuple[str, ...] = ()
    first_difference: str = ""
    reason: str = ""
    steps: int = 0
    unused: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The verdict as JSON data (`--json`)."""
        return {
            "run_id": self.run_id, "function": self.function_id, "identical": self.identical,
            "steps": self.steps, "first_difference": self.first_difference or None,
            "reason": self.reason or None, "unused_steps": list(self.unused),
            "recorded": self.recorded, "replayed": self.replayed, "diff": list(self.diff),
        }  # fmt: skip


def check_replay(runtime: Runtime, record: RunRecord) -> ReplayCheck:
    """Replay `record` (completed or failed) and compare. Raises `RunNotFoundError` for a run
    that has not finished and `FunctionNotFoundError` when its function is not loaded here.
    Writes nothing."""
    if record.status not in REPLAYABLE:
        raise RunNotFoundError(f"run {record.id} is {record.status}; only a finished run replays")
    fn = runtime.registry.get(record.function_id)
    if fn is None:
        raise FunctionNotFoundError(
            f"function {record.function_id!r} is not loaded in this process "
            "(name its module with --functions or HARNESS_FUNCTION_MODULES)"
        )
    ran = replay(runtime, fn, record, runtime.ledger.journal(record.id))
    recorded = _outcome(record.status, record.result, record.error)
    replayed = _outcome(ran.status, ran.result, ran.error)
    if ran.diverged is None and ran.unused:
        first, reason = ran.unused[0], "the journal has it but the code never asked for it"
    else:
        first = ran.diverged.step if ran.diverged else ""
        reason = ran.diverged.reason if ran.diverged else ""
    if ran.diverged is not None:
        replayed = {"status": "diverged", "step": first, "reason": reason}
    return ReplayCheck(
        run_id=record.id, function_id=record.function_id,
        identical=recorded == replayed and not first, recorded=recorded, replayed=replayed,
        diff=_diff(recorded, replayed), first_difference=first, reason=reason,
        steps=len(ran.asked), unused=ran.unused,
    )  # fmt: skip


def _outcome(status: str, result: Any, error: str) -> dict[str, Any]:
    return {"status": status, "error": error} if status == "failed" else {
        "status": status, "result": result}  # fmt: skip


def _diff(recorded: dict[str, Any], replayed: dict[str, Any]) -> tuple[str, ...]:
    def lines(value: dict[str, Any]) -> list[str]:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    return tuple(
        difflib.unified_diff(lines(recorded), lines(replayed), "recorded", "replayed", lineterm="")
    )


__all__ = ["REPLAYABLE", "ReplayCheck", "check_replay"]
