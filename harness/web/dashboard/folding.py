"""Which rows the run list shows: the runs people care about, with the plumbing folded in.

One chat message starts several runs: the turn (`agent-handle-message`), the delivery of each
reply (`send-reply`), approval messages (and, on a fleet from before the turn acknowledged its
message itself, `acknowledge-message`, whose old runs still fold under their message); and
heartbeats tick on their own. Listed flat they bury the turns. Here each plumbing run is
folded under the run it serves (the message's turn, the run whose reply or approval it
carries, the run whose failure it reports); plumbing serving nothing on the page (a
heartbeat) is left out. Asked for (`plumbing=True`), or filtered by function (whoever asks
for `send-reply` runs wants them as rows), the list is not folded at all.

A row also says how many times the run was really tried (the run's own retries and the most
tries of any of its steps: a step retry parks and resumes the run without counting a run
attempt) and, for a chat turn, the reply's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.events import MESSAGE_HANDLER, MESSAGE_RECEIVED
from harness.observe.run_filters import RunFilter, find_runs
from harness.observe.run_views import RunView, run_view
from harness.redaction import redact
from harness.runtime.bus import run_id_for
from harness.runtime.instance import Runtime
from harness.runtime.ledger import RunRecord

CHAT_COMMAND = "agent-chat-command"  # harness.agent.chat_commands.handler.CHAT_COMMAND
ASK_APPROVAL = "ask-approval"  # channels.approvals.ASK_APPROVAL
PLUMBING = frozenset(
    {
        "acknowledge-message",  # channels.acknowledge.ACKNOWLEDGE
        "send-reply",  # channels.delivery.SEND_REPLY
        ASK_APPROVAL,
        "answer-approval",  # channels.approvals.ANSWER_APPROVAL
        "close-approval",  # channels.approvals.CLOSE_APPROVAL
        "cancel-approval",  # channels.approvals.CANCEL_APPROVAL
        "global-failure-handler",  # channels.notices.FAILURE_HANDLER
        "reconsider-notice",  # channels.notices.RECONSIDER_NOTICE
        "approval-by-text",  # harness.agent.approvals.text.APPROVAL_BY_TEXT
        "agent-heartbeat",  # harness.agent.memory.distill.HEARTBEAT_FUNCTION
        "sidecar-heartbeat",  # harness.sidecar.builtins.HEARTBEAT
    }
)
"""Function ids whose runs serve another run or the fleet, not a person: named here as text
(importing their modules would register their functions); a test checks each against the
constant it copies."""
SCAN_FACTOR = 4
"""How many runs are read per row wanted: a message takes about two runs (its turn, its
reply's delivery), more with approvals, notices and heartbeats between."""
SUMMARY_CHARS = 160


@dataclass(frozen=True)
class RunRow:
    """One row of the run list: the run, its true number of tries, what it answered (a chat
    turn's reply) or why it failed, and the plumbing runs folded under it, newest first."""

    run: RunView
    attempts: int
    summary: str
    plumbing: tuple[RunView, ...] = ()


def run_rows(
    runtime: Runtime, wanted: RunFilter, *, plumbing: bool = False, limit: int = 50
) -> list[RunRow]:
    """The newest `limit` rows passing `wanted`, plumbing folded (see the module docstring).
    Raises `BusUnavailableError` when Redis is down."""
    fold = not (wanted.function or plumbing)
    records = find_runs(runtime, wanted, limit * SCAN_FACTOR if fold else limit)
    if not fold:
        return _rows(runtime, records[:limit], {})
    ids = {record.id for record in records}
    served: dict[str, list[RunRecord]] = {}
    top: list[RunRecord] = []
    for record in records:
        if record.function_id not in PLUMBING:
            top.append(record)
            continue
        parent = next((run for run in serves(record) if run in ids), "")
        if parent:
            served.setdefault(parent, []).append(record)
    return _rows(runtime, top[:limit], served)


def serves(record: RunRecord) -> list[str]:
    """The ids of the runs plumbing run `record` may serve, likeliest first: the run its
    event names (`data.run_id`: a reply's, an approval's, a failure's), else the turn (or
    chat command) its message started. Never raises."""
    event: dict[str, Any] = record.event
    data = event.get("data")
    if isinstance(data, dict) and isinstance(data.get("run_id"), str):
        return [data["run_id"]]
    if event.get("name") == MESSAGE_RECEIVED and isinstance(event.get("id"), str):
        return [run_id_for(fn, event["id"]) for fn in (MESSAGE_HANDLER, CHAT_COMMAND)]
    return []


def _rows(
    runtime: Runtime, records: list[RunRecord], served: dict[str, list[RunRecord]]
) -> list[RunRow]:
    tries = runtime.run_index.step_tries([record.id for record in records])
    return [
        RunRow(
            run=run_view(record),
            attempts=attempts(record, step_tries),
            summary=summary(record),
            plumbing=tuple(run_view(r) for r in served.get(record.id, [])),
        )
        for record, step_tries in zip(records, tries, strict=True)
    ]


def attempts(record: RunRecord, step_tries: int) -> int:
    """How many times `record`'s run was tried: its own tries (0 before it first started) or,
    when more, the most tries one of its steps took (`step_tries`)."""
    return max(step_tries, record.attempt + 1 if record.started_at else 0)


def summary(record: RunRecord) -> str:
    """What a row says of its run: a failure's error, a chat turn's reply text (its result's
    `reply`), else "" (bounded, redacted)."""
    if record.error:
        text = record.error
    elif isinstance(record.result, dict) and isinstance(record.result.get("reply"), str):
        text = record.result["reply"]
    else:
        return ""
    return bounded(text, SUMMARY_CHARS)


def bounded(text: str, limit: int = 4000) -> str:
    """`text` redacted and cut to at most `limit` characters (an ellipsis marks a cut)."""
    text = redact(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
