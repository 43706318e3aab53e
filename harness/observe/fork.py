"""`harness runs fork RUN [--from STEP]` (alias `runs rerun`): a new run of the same function
on the same event data that replays the old run's journal up to (not including) STEP, then
runs on for real.

Without `--from` nothing is reused. Steps are copied in the order they ended, so a handler
that asks for its steps in the same order (as every handler must) replays them unchanged.
"""

from __future__ import annotations

import uuid

from harness.errors import RunNotFoundError
from harness.events import Event
from harness.runtime.bus import publish, run_id_for
from harness.runtime.instance import Runtime
from harness.runtime.journal_seed import seed_journal
from harness.runtime.ledger import RunRecord


def reused_steps(
    journal: dict[str, dict[str, object]], from_step: str
) -> dict[str, dict[str, object]]:
    """The completed entries of `journal` that ended before step `from_step` did (all of them
    for ""). Failed or retrying entries are never reused. Raises `RunNotFoundError` for a
    step the journal does not have."""

    def ended(item: tuple[str, dict[str, object]]) -> float:
        value = item[1].get("t")
        return float(value) if isinstance(value, int | float) else float("inf")

    ordered = sorted(journal.items(), key=ended)
    if not from_step:
        return {}
    keys = [key for key, _ in ordered]
    if from_step not in keys:
        raise RunNotFoundError(f"the run has no step {from_step!r}; steps: {', '.join(keys)}")
    before = ordered[: keys.index(from_step)]
    return {key: entry for key, entry in before if "e" not in entry}


def fork(runtime: Runtime, record: RunRecord, from_step: str = "") -> str:
    """Start the new run and return its id. Raises `RunNotFoundError` (unknown step),
    `FunctionNotFoundError` (the function is gone) or `BusUnavailableError`."""
    copied = reused_steps(runtime.ledger.journal(record.id), from_step)
    old = Event.model_validate(record.event)
    event = old.model_copy(update={"id": f"{old.id}:fork:{uuid.uuid4().hex[:8]}"})
    new_id = run_id_for(record.function_id, event.id)
    seed_journal(runtime, new_id, copied)
    publish(event, runtime=runtime, target=record.function_id)
    return new_id
