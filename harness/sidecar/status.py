"""What the registered functions look like now, for `harness functions` and for the agent.

`function_table` lists every function in the trigger table with its source, triggers, next
cron time and last run; `agent_notes` is the short, bounded text the agent sees at the end of
its system prompt: files that failed to load, and recent failed runs of its functions.
"""

from __future__ import annotations

import logging
import zoneinfo
from collections.abc import Collection
from datetime import UTC, datetime

from croniter import croniter
from pydantic import BaseModel

from harness.redaction import RedactedText, redact
from harness.runtime import Runtime
from harness.runtime.function_sources import (
    FILE_SOURCE,
    LoadError,
    RunFailure,
    errors_and_failures,
    load_errors,
    origins,
    recent_failures,
)
from harness.runtime.functions import CronTrigger, FunctionSpec
from harness.runtime.presence import live_members
from harness.sidecar.loader import describe_trigger

log = logging.getLogger(__name__)
HISTORY_SCAN = 500
NOTE_ITEMS = 5
NOTE_CHARS = 240
FAILURE_WINDOW_MS = 24 * 3600 * 1000


class LastRun(BaseModel, frozen=True):
    """A function's newest run in the retained history."""

    id: str
    status: str
    created_at_ms: int
    error: RedactedText = ""


class FunctionRow(BaseModel, frozen=True):
    """One registered function: `source` is `built-in`, `module`, `file` or `sidecar`."""

    id: str
    source: str
    file: str = ""
    queue: str
    triggers: list[str]
    next_cron: str | None = None
    last_run: LastRun | None = None


class FunctionTable(BaseModel):
    """Everything `harness functions` shows. `refused`: why no function runs on this machine
    (no OS sandbox can confine them: `sandbox.refusal`), or ""."""

    sidecar_alive: bool
    functions: list[FunctionRow]
    load_errors: list[LoadError]
    failures: list[RunFailure]
    refused: str = ""


def function_table(runtime: Runtime, builtin_ids: Collection[str]) -> FunctionTable:
    """Read the trigger table, origins, load errors and recent runs. Raises on Redis errors."""
    now = datetime.fromtimestamp(runtime.clock(), UTC)
    known = origins(runtime)
    last = _last_runs(runtime)
    rows = []
    for spec in runtime.triggers.specs():
        origin = known.get(spec.id)
        if origin is not None:
            source, file = ("file", origin.file) if origin.file else ("sidecar", "")
        else:
            source, file = ("built-in" if spec.id in builtin_ids else "module"), ""
        rows.append(
            FunctionRow(
                id=spec.id,
                source=source,
                file=file,
                queue=spec.queue,
                triggers=[describe_trigger(t) for t in spec.triggers],
                next_cron=_next_cron(spec, now),
                last_run=last.get(spec.id),
            )
        )
    return FunctionTable(
        sidecar_alive=bool(live_members(runtime, "sidecar")),
        functions=rows,
        load_errors=load_errors(runtime, FILE_SOURCE),
        failures=recent_failures(runtime, FILE_SOURCE),
    )


def _next_cron(spec: FunctionSpec, now: datetime) -> str | None:
    times = []
    for trigger in spec.triggers:
        if isinstance(trigger, CronTrigger):
            local = now.astimezone(zoneinfo.ZoneInfo(trigger.tz))
            times.append(croniter(trigger.expression, local).get_next(datetime))
    return min(times).isoformat() if times else None


def _last_runs(runtime: Runtime) -> dict[str, LastRun]:
    found: dict[str, LastRun] = {}
    for row in runtime.ledger.recent(HISTORY_SCAN):
        if row.function_id not in found:
            # masked before the cut, which could split a secret and leave its head unmasked
            error = redact(row.error)[:200]
            found[row.function_id] = LastRun(
                id=row.id, status=row.status, created_at_ms=row.created_at, error=error
            )
    return found


def agent_notes(runtime: Runtime) -> str:
    """Load errors and failed runs (last 24 h) of the agent's functions, at most
    `NOTE_ITEMS` of each, or "" when there is nothing to say. Raises on Redis errors."""
    errors, recent = errors_and_failures(runtime, FILE_SOURCE)
    since = runtime.now_ms() - FAILURE_WINDOW_MS
    failures = [f for f in recent if f.at_ms >= since]
    if not errors and not failures:
        return ""
    lines = ["## Your functions (functions/)"]
    if errors:
        lines.append("Files that failed to load (not running; fix them, the sidecar reloads):")
        lines += [f"- {_cut(e.describe())}" for e in errors[:NOTE_ITEMS]]
        if len(errors) > NOTE_ITEMS:
            lines.append(f"- ... and {len(errors) - NOTE_ITEMS} more")
    if failures:
        lines.append("Failed runs in the last 24 hours, newest first:")
        for failure in failures[:NOTE_ITEMS]:
            when = datetime.fromtimestamp(failure.at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")
            lines.append(
                f"- {failure.function_id} (run {failure.run_id}, {when} UTC): {_cut(failure.error)}"
            )
    return "\n".join(lines)


def function_notes(runtime: Runtime) -> str:
    """`agent_notes`, or "" when Redis cannot say: the notes are a courtesy, a turn must not
    fail over them. Never raises."""
    try:
        return agent_notes(runtime)
    except Exception as exc:
        log.debug("cannot read the sidecar's notes: %s", exc)
        return ""


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 3] + "..."
