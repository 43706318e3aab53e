"""Following a run from the command line until it ends: `runs show ID --follow` and
`runs fork/rerun ... --wait/--follow`.

    record = follow_run(rt, run_id, emit=typer.echo)          # every step as it ends
    record = follow_run(rt, run_id, emit=None)                 # just wait for the end
    raise typer.Exit(exit_code(record))

Polls the ledger like the dashboard's live view does (`harness.web.dashboard.routes`): the
run's record and journal, every `POLL_S`. A step is printed once per status it is seen in, so
a step the run sleeps or waits in shows as `sleeping`, then `completed`. The exit code says
how the run ended: 0 completed, 1 failed or cancelled (or still running at the deadline).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from harness.errors import RunNotFoundError
from harness.observe.run_views import StepView, run_view, step_views
from harness.redaction import redact_json
from harness.runtime import Runtime
from harness.runtime.ledger import RunRecord

FINISHED = frozenset({"completed", "failed", "cancelled"})
POLL_S = 0.5


class FollowTimeoutError(Exception):
    """The run had not ended by the deadline; `record` is its last state."""

    def __init__(self, record: RunRecord) -> None:
        super().__init__(f"run {record.id} is still {record.status}")
        self.record = record


def _sleep() -> None:
    time.sleep(POLL_S)


def step_line(step: StepView) -> str:
    """One followed step: `key  kind  status  [duration]` (no duration while it lasts)."""
    took = f"  {_duration(step.duration_ms)}" if step.duration_ms is not None else ""
    return f"{step.key}  {step.kind}  {step.status}{took}"


def _duration(ms: int | None) -> str:
    if ms is None:
        return ""
    return f"{ms}ms" if ms < 1000 else f"{ms / 1000:.1f}s"


def follow_run(
    runtime: Runtime,
    run_id: str,
    emit: Callable[[str], None] | None,
    *,
    pause: Callable[[], None] = _sleep,
    timeout_s: float | None = None,
) -> RunRecord:
    """Return the ended record of run `run_id`, calling `emit` (when given) with a line for
    each step as it is seen (once per status) and one for each change of the run's status.
    `pause` is called between two looks at the ledger (default: sleep `POLL_S`). Raises
    `RunNotFoundError` when the run is not (or no longer) in the ledger, `FollowTimeoutError`
    when it has not ended within `timeout_s` seconds (None: wait for ever), and
    `BusUnavailableError` when Redis goes away."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    seen: set[tuple[str, str]] = set()
    last_status = ""
    while True:
        record = runtime.ledger.run(run_id)
        if record is None:
            raise RunNotFoundError(f"run {run_id} is not in the ledger (expired or never started)")
        if emit is not None:
            view = run_view(record)
            for step in step_views(view, runtime.ledger.journal(run_id)):
                if (step.key, step.status) not in seen:
                    seen.add((step.key, step.status))
                    emit(step_line(step))
            if view.status != last_status:
                last_status = view.status
                emit(f"run {run_id} {view.status}")
        if record.status in FINISHED:
            return record
        if deadline is not None and time.monotonic() >= deadline:
            raise FollowTimeoutError(record)
        pause()


def exit_code(record: RunRecord) -> int:
    """0 for a completed run, 1 for any other end (failed, cancelled)."""
    return 0 if record.status == "completed" else 1


def outcome_lines(record: RunRecord) -> list[str]:
    """What an ended run produced: its result (a string as it is, anything else as JSON,
    redacted like the logs), or its error."""
    if record.status != "completed":
        return [f"run {record.id} {record.status}: {record.error or 'no error recorded'}"]
    result = redact_json(record.result)
    if result is None:
        return []
    if isinstance(result, str):
        return [result]
    return [json.dumps(result, ensure_ascii=False, indent=2)]
