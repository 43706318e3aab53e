"""The checks every chaos scenario ends with, read from the fakes and the ledger.

- every accepted webhook got exactly one reply, in order per chat (the fake Telegram's
  messages against the load driver's accepted tokens). One exception, the documented one: a
  worker killed outright between Telegram's answer and our record of it leaves the chunk in
  flight to be posted again (Telegram has no idempotency key), so a copy right after the
  first, with a SIGKILL between the two, is counted apart (`reposted_after_kill`). "Between"
  starts `IN_FLIGHT_S` before the first copy was recorded: the fake records a request when its
  handler thread gets to it, so a request the killed worker wrote just before dying can be
  recorded just after the kill (seen at +0.00 to +0.01 s, the repost then one lease later);
- no completed tool step ran twice (the tool log: a token executed again only when the worker
  that executed it before was killed outright, before it could journal the step);
- no two runs of one session overlapped (the ledger's `started_at`, set once at a run's first
  start, and `ended_at`, of the `agent-handle-message` runs of each session key);
- every turn completed, and no reply is left undelivered.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass, field

from channels.delivery import SEND_REPLY
from harness.agent.handlers import HANDLE_MESSAGE
from harness.records.undelivered import RedisUndeliveredReplies
from harness.runtime.ledger import RunRecord
from tests.chaos.fleet import ChaosFleet, wait_explained
from tests.chaos.load import Outcome

TERMINAL = frozenset({"completed", "failed", "cancelled"})
IN_FLIGHT_S = 1.0
"""How long before the first copy was recorded a SIGKILL may have come and still have left
that copy in flight (written by the killed worker, read by the fake after the kill)."""
SETTLE_TIMEOUT_S = 240.0
SETTLE_PER_MESSAGE_S = 0.5
"""Waiting for the fleet to settle allows `SETTLE_TIMEOUT_S` plus this much per message."""


@dataclass
class Report:
    """What the checks found; `violations()` lists what must be empty."""

    accepted: int = 0
    replies: int = 0
    duplicate_replies: int = 0
    duplicates: list[str] = field(default_factory=list)
    """Each duplicate: its chat, text, and when each copy was recorded against the kills."""
    reposted_after_kill: int = 0
    reordered_chats: int = 0
    missing_replies: int = 0
    unexpected_replies: list[str] = field(default_factory=list)
    tool_executions: int = 0
    tool_reruns_after_kill: int = 0
    tool_reruns_unrecorded: int = 0
    tool_reruns: list[str] = field(default_factory=list)
    tools_missing: int = 0
    tool_results_unseen: int = 0
    overlapping_runs: list[str] = field(default_factory=list)
    unfinished_runs: list[str] = field(default_factory=list)
    undelivered: int = 0

    def violations(self) -> list[str]:
        """Each broken invariant, in words; empty when all hold."""
        found = []
        if self.duplicate_replies:
            found.append(
                f"{self.duplicate_replies} replies sent more than once: {self.duplicates[:5]}"
            )
        if self.reordered_chats:
            found.append(f"{self.reordered_chats} chats got their replies out of order")
        if self.missing_replies:
            found.append(f"{self.missing_replies} accepted messages got no reply")
        if self.unexpected_replies:
            found.append(f"unexpected replies: {self.unexpected_replies[:5]}")
        if self.tool_reruns:
            found.append(f"completed tool steps ran again: {self.tool_reruns[:5]}")
        if self.tools_missing:
            found.append(f"{self.tools_missing} turns never ran their tool")
        if self.tool_results_unseen:
            found.append(f"{self.tool_results_unseen} tool results never reached the model")
        if self.overlapping_runs:
            found.append(f"runs of one session overlapped: {self.overlapping_runs[:5]}")
        if self.unfinished_runs:
            found.append(f"runs not completed: {self.unfinished_runs[:5]}")
        if self.undelivered:
            found.append(f"{self.undelivered} replies recorded as undelivered")
        return found

    def figures(self) -> str:
        """One line for the test output and the benchmark notes."""
        return (
            f"accepted={self.accepted} replies={self.replies} "
            f"duplicates={self.duplicate_replies} reordered={self.reordered_chats} "
            f"reposted_after_kill={self.reposted_after_kill} "
            f"missing={self.missing_replies} tool_executions={self.tool_executions} "
            f"tool_reruns_after_kill={self.tool_reruns_after_kill} "
            f"tool_reruns_unrecorded={self.tool_reruns_unrecorded}"
        )


def _runs(chaos: ChaosFleet) -> list[RunRecord]:
    rt = chaos.runtime()
    return [
        r
        for r in rt.ledger.recent(limit=1_000_000)
        if r.function_id in (HANDLE_MESSAGE, SEND_REPLY)
    ]


def wait_settled(chaos: ChaosFleet, outcome: Outcome, timeout: float | None = None) -> None:
    """Until there is a reply for every accepted message and every turn and delivery run
    has ended (so nothing more will be sent)."""

    def settled() -> bool:
        if len(chaos.telegram.messages) < outcome.accepted_count:
            return False
        runs = _runs(chaos)
        turns = sum(1 for r in runs if r.function_id == HANDLE_MESSAGE)
        return turns >= outcome.accepted_count and all(r.status in TERMINAL for r in runs)

    def progress() -> str:
        states = Counter(f"{r.function_id}:{r.status}" for r in _runs(chaos))
        sent = len(chaos.telegram.messages)
        return f"{sent} replies for {outcome.accepted_count} accepted; runs {dict(states)}"

    if timeout is None:
        timeout = SETTLE_TIMEOUT_S + SETTLE_PER_MESSAGE_S * outcome.accepted_count
    wait_explained(settled, "the fleet to settle", progress, timeout)


def check(chaos: ChaosFleet, outcome: Outcome) -> Report:
    """Compare what was accepted with what the fakes and the ledger saw."""
    report = Report(accepted=outcome.accepted_count)
    _check_replies(chaos, outcome, report)
    _check_tools(chaos, outcome, report)
    _check_runs(chaos, report)
    report.undelivered = len(RedisUndeliveredReplies(chaos.client(), chaos.keys).all())
    return report


def _check_replies(chaos: ChaosFleet, outcome: Outcome, report: Report) -> None:
    sent: dict[int, list[tuple[str, float]]] = {}
    for message, at in zip(chaos.telegram.messages, chaos.telegram.message_times, strict=True):
        sent.setdefault(int(message["chat"]["id"]), []).append((str(message["text"]), at))
    report.replies = sum(len(texts) for texts in sent.values())
    for chat in set(sent) | set(outcome.accepted):
        expected = [f"re {t}" for t in outcome.accepted.get(chat, [])]
        got: list[str] = []
        previous: tuple[str, float] | None = None
        for text, at in sent.get(chat, []):
            if (
                previous is not None
                and previous[0] == text
                and _killed_between(chaos, previous[1] - IN_FLIGHT_S, at)
            ):
                report.reposted_after_kill += 1
            else:
                got.append(text)
            previous = (text, at)
        counts = Counter(got)
        report.duplicate_replies += sum(n - 1 for text, n in counts.items() if text in expected)
        report.duplicates += [
            _describe_copies(chaos, chat, text, [at for t, at in sent[chat] if t == text])
            for text, n in counts.items()
            if n > 1 and text in expected
        ]
        report.unexpected_replies += [text for text in got if text not in expected]
        report.missing_replies += sum(1 for text in expected if text not in counts)
        first_seen = list(dict.fromkeys(text for text in got if text in expected))
        if first_seen != [text for text in expected if text in counts]:
            report.reordered_chats += 1


def _describe_copies(chaos: ChaosFleet, chat: int, text: str, times: list[float]) -> str:
    """`text` sent to `chat` at `times`, each as seconds from the first kill before the last
    copy (or from the first copy when no kill came before it)."""
    kills = [at for at in chaos.kill_times if at <= times[-1]]
    origin, name = (kills[-1], "last kill before") if kills else (times[0], "first copy")
    offsets = ", ".join(f"{at - origin:+.2f}s" for at in times)
    return f"chat {chat} {text!r}: copies at {offsets} from the {name}"


def _killed_between(chaos: ChaosFleet, start: float, end: float) -> bool:
    return any(start <= at <= end for at in chaos.kill_times)


def _check_tools(chaos: ChaosFleet, outcome: Outcome, report: Report) -> None:
    """A completed tool step is one whose output the run recorded (the model was sent it).
    Executions before that one were never recorded (their worker was killed, or Redis was
    down when it tried): running the step again is what durability promises for them, and
    they are counted, not failed. Any execution after the recorded one, or a second recorded
    output, is a completed step run again: reported with the pids of every execution, in
    order, and of those whose output the model saw, which tells the two apart (a worker
    that went on after its lease, or two outputs recorded)."""
    executions: dict[str, list[tuple[int, str]]] = {}
    for token, pid, nonce in chaos.tool_runs():
        executions.setdefault(token, []).append((pid, nonce))
    report.tool_executions = sum(len(runs) for runs in executions.values())
    for token, runs in executions.items():
        pids = [pid for pid, _ in runs]
        recorded = chaos.tool_results.nonces(token)
        nonces = [nonce for _, nonce in runs]
        last = max((nonces.index(n) for n in recorded if n in nonces), default=len(runs) - 1)
        rerun = f"{token} by {pids}, the model saw {[pid for pid, n in runs if n in recorded]}"
        earlier = pids[:last]
        report.tool_reruns_after_kill += sum(pid in chaos.killed_pids for pid in earlier)
        if recorded:
            report.tool_reruns_unrecorded += len(earlier)
            if len(recorded) > 1 or last != len(runs) - 1:
                report.tool_reruns.append(rerun)
        else:
            # every turn answers only after the model saw its tool's result
            report.tool_results_unseen += 1
            if any(pid not in chaos.killed_pids for pid in earlier):
                # nothing seen to tell recorded from unrecorded: only a kill explains a rerun
                report.tool_reruns.append(rerun)
    accepted = {t for tokens in outcome.accepted.values() for t in tokens}
    report.tools_missing = len(accepted - set(executions))


def _check_runs(chaos: ChaosFleet, report: Report) -> None:
    by_session: dict[str, list[RunRecord]] = {}
    for run in _runs(chaos):
        if run.status != "completed":
            report.unfinished_runs.append(f"{run.id} {run.status} {run.error[:200]}")
        if run.function_id != HANDLE_MESSAGE:
            continue
        session = str((run.event.get("data") or {}).get("session_key"))
        by_session.setdefault(session, []).append(run)
    for session, runs in by_session.items():
        runs.sort(key=lambda r: r.started_at)
        for before, after in itertools.pairwise(runs):
            if after.started_at < before.ended_at:
                report.overlapping_runs.append(
                    f"{session}: {before.id} [{before.started_at}, {before.ended_at}] and "
                    f"{after.id} from {after.started_at}"
                )


def assert_invariants(chaos: ChaosFleet, outcome: Outcome) -> Report:
    """Wait for the fleet to settle, run every check, fail with what broke; the report."""
    assert not outcome.unsent, f"never accepted: {outcome.unsent[:10]}"
    assert not outcome.ignored, f"ignored by the webhook: {outcome.ignored[:5]}"
    wait_settled(chaos, outcome)
    report = check(chaos, outcome)
    problems = report.violations()
    assert not problems, "\n".join([report.figures(), *problems, json.dumps(outcome.statuses)])
    return report
