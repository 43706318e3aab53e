"""The invariant checks themselves catch what they are meant to: a suite whose checks cannot
fail would prove nothing. Pure: the fakes' records are given, no fleet is started."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.chaos.invariants import Report, _check_replies, _check_tools
from tests.chaos.load import Outcome


@dataclass
class _Telegram:
    messages: list[dict[str, Any]] = field(default_factory=list)
    message_times: list[float] = field(default_factory=list)


@dataclass
class _Fleet:
    """What the checks read of a `ChaosFleet`."""

    telegram: _Telegram = field(default_factory=_Telegram)
    kill_times: list[float] = field(default_factory=list)
    killed_pids: set[int] = field(default_factory=set)
    runs: list[tuple[str, int]] = field(default_factory=list)

    def sent(self, chat: int, text: str, at: float) -> None:
        self.telegram.messages.append({"chat": {"id": chat}, "text": text})
        self.telegram.message_times.append(at)

    def tool_runs(self) -> list[tuple[str, int]]:
        return self.runs


def _replies(fleet: _Fleet, accepted: list[str]) -> Report:
    report = Report()
    _check_replies(fleet, Outcome(accepted={1: accepted}), report)  # type: ignore[arg-type]
    return report


def test_replies_in_order_once_each_break_nothing() -> None:
    fleet = _Fleet()
    for i, token in enumerate(["c1-m0", "c1-m1"]):
        fleet.sent(1, f"re {token}", at=i)
    assert _replies(fleet, ["c1-m0", "c1-m1"]).violations() == []


def test_a_doubled_reply_without_a_kill_is_a_duplicate() -> None:
    fleet = _Fleet()
    for i, text in enumerate(["re c1-m0", "re c1-m0", "re c1-m1"]):
        fleet.sent(1, text, at=i)
    report = _replies(fleet, ["c1-m0", "c1-m1"])
    assert (report.duplicate_replies, report.reposted_after_kill) == (1, 0)


def test_a_copy_right_after_the_first_with_a_kill_between_is_counted_apart() -> None:
    fleet = _Fleet(kill_times=[0.5])
    for i, text in enumerate(["re c1-m0", "re c1-m0", "re c1-m1"]):
        fleet.sent(1, text, at=i)
    report = _replies(fleet, ["c1-m0", "c1-m1"])
    assert (report.duplicate_replies, report.reposted_after_kill) == (0, 1)
    assert report.violations() == []


def test_a_late_copy_after_the_next_reply_is_a_duplicate_even_after_a_kill() -> None:
    # the defect issue 18 found: m0, m1, m0
    fleet = _Fleet(kill_times=[0.5, 1.5])
    for i, text in enumerate(["re c1-m0", "re c1-m1", "re c1-m0"]):
        fleet.sent(1, text, at=i)
    assert _replies(fleet, ["c1-m0", "c1-m1"]).duplicate_replies == 1


def test_replies_out_of_order_and_missing_ones_are_reported() -> None:
    fleet = _Fleet()
    for i, text in enumerate(["re c1-m1", "re c1-m0", "Sorry, something went wrong"]):
        fleet.sent(1, text, at=i)
    report = _replies(fleet, ["c1-m0", "c1-m1", "c1-m2"])
    assert report.reordered_chats == 1
    assert report.missing_replies == 1
    assert report.unexpected_replies == ["Sorry, something went wrong"]


def test_a_tool_step_run_again_counts_only_when_its_first_worker_was_killed() -> None:
    fleet = _Fleet(killed_pids={10}, runs=[("c1-m0", 10), ("c1-m0", 11), ("c1-m1", 11)])
    fleet.runs.append(("c1-m1", 12))
    report = Report()
    outcome = Outcome(accepted={1: ["c1-m0", "c1-m1", "c1-m2"]})
    _check_tools(fleet, outcome, report)  # type: ignore[arg-type]
    assert report.tool_reruns_after_kill == 1
    assert report.tool_reruns == ["c1-m1 by [11, 12]"]
    assert report.tools_missing == 1
