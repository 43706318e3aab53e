"""What waits for the operator: pending approval requests, pairing codes and undelivered
replies, for the console's actions page; and `answer_approval_as_operator`, the console's
press of an approval button (an override where the request names approvers).

A pending approval is found through the run that waits on it: a waiting run whose latest
request (`ApprovalStore.of_run`) has no answer yet (`settled` is None). The store keeps no
list of open requests, and a request whose run ended counts as expired anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.addresses import Destination
from harness.events.data import OPERATOR_CHANNEL, OPERATOR_SUBJECT, ApprovalGiven
from harness.observe.run_filters import RunFilter, find_runs
from harness.records.pairing import PairingRequest
from harness.records.stores import redis_records
from harness.records.undelivered import UndeliveredReply
from harness.runtime.bus import publish
from harness.runtime.instance import Runtime
from harness.runtime.sessions import session_of

OPERATOR_LABEL = "the operator (dashboard)"
WAITING_SCAN = 200
"""Waiting runs looked at for open approval requests, newest first."""


@dataclass(frozen=True)
class PendingApproval:
    """An open request: its id, the run waiting on it (its page shows the tool call asked
    about), that run's function and its session, and who may answer it (empty: whoever
    reaches it, the console included; otherwise only they, or the console as an explicit
    override)."""

    approval_id: str
    run_id: str
    function_id: str
    session: str
    approvers: tuple[str, ...] = ()

    @property
    def needs_override(self) -> bool:
        """True when a press in the console overrides who the request names (its approvers)."""
        return bool(self.approvers)


@dataclass(frozen=True)
class PendingWork:
    """Everything the actions page lists."""

    approvals: list[PendingApproval]
    pairing: list[PairingRequest]
    undelivered: list[UndeliveredReply]


def pending_approvals(runtime: Runtime) -> list[PendingApproval]:
    """Open approval requests of waiting runs, newest run first. Raises
    `BusUnavailableError` when Redis is down."""
    store = redis_records(runtime).approvals
    found = []
    for record in find_runs(runtime, RunFilter(status="waiting"), limit=WAITING_SCAN):
        approval_id = store.of_run(record.id)
        if approval_id is None or store.settled(approval_id) is not None:
            continue
        approvers = tuple(store.approvers(approval_id) or ())
        session, function_id = session_of(record.event), record.function_id
        found.append(PendingApproval(approval_id, record.id, function_id, session, approvers))
    return found


def pending_work(runtime: Runtime) -> PendingWork:
    """Open approvals, pairing codes and undelivered replies (newest first). Raises
    `BusUnavailableError` when Redis is down."""
    records = redis_records(runtime)
    undelivered = sorted(records.undelivered.all(), key=lambda r: r.at_ms, reverse=True)
    return PendingWork(pending_approvals(runtime), records.pairing.pending(), undelivered)


def answer_approval_as_operator(
    runtime: Runtime,
    approval_id: str,
    decision: Literal["approve", "deny"],
    *,
    override: bool = False,
) -> str:
    """Press an approval button as the operator: publish the same `agent.approval.given`
    event a chat button publishes; the `answer-approval` function decides whether it counts
    (the first answer does; one for a request naming approvers counts only with `override`,
    recorded as overriding them: see `ApprovalStore.answer`). Returns the event id; a second
    press is the same event. Raises `BusUnavailableError` when Redis is down."""
    given = ApprovalGiven(
        approval_id=approval_id, decision=decision, subject=OPERATOR_SUBJECT,
        label=OPERATOR_LABEL, channel=OPERATOR_CHANNEL, override=override,
        destination=Destination(chat_id=OPERATOR_CHANNEL),
    )  # fmt: skip
    event = given.to_event(id=f"dashboard-answer-{approval_id}")
    publish(event, runtime=runtime)
    return event.id
