"""The invariant checks themselves catch what they are meant to: a suite whose checks cannot
fail would prove nothing. Pure: the fakes' records are given, no fleet is started."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.chaos.fleet import ToolResultsSeen
from tests.chaos.invariants import IN_FLIGHT_S, Report, _check_replies, _check_tools
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
    runs: list[tuple[str, int, str]] = field(default_factory=list)
    tool_results: ToolResultsSeen = field(default_factory=ToolResultsSeen)

    def sent(self, chat: int, text: str, at: float) -> None:
        self.telegram.messages.append({"chat": {"id": chat}, "text": text})
        self.telegram.message_times.append(at)

    def tool_runs(self) -> list[tuple[str, int, str]]:
        return self.runs

    def ran(self, token: str, pid: int, nonce: str, *, recorded: bool = False) -> None:
        self.runs.append((token, pid, nonce))
        if recorded:
            self.tool_results.note(f"{token} {pid} {nonce}\n")


def _tools(fleet: _Fleet, accepted: list[str]) -> Report:
    report = Report()
    _check_tools(fleet, Outcome(accepted={1: accepted}), report)  # type: ignore[arg-type]
    return report


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


def test_a_copy_in_flight_at_the_kill_and_recorded_just_after_it_is_counted_apart() -> None:
    # seen at full scale: the killed worker's request read by the fake 10 ms after the kill,
    # the repost one lease later
    fleet = _Fleet(kill_times=[10.0])
    for text, at in [("re c1-m0", 10.01), ("re c1-m0", 14.0), ("re c1-m1", 15.0)]:
        fleet.sent(1, text, at=at)
    report = _replies(fleet, ["c1-m0", "c1-m1"])
    assert (report.duplicate_replies, report.reposted_after_kill) == (0, 1)


def test_a_kill_long_before_both_copies_excuses_nothing() -> None:
    fleet = _Fleet(kill_times=[10.0 - IN_FLIGHT_S - 0.5])
    for text, at in [("re c1-m0", 10.0), ("re c1-m0", 14.0), ("re c1-m1", 15.0)]:
        fleet.sent(1, text, at=at)
    report = _replies(fleet, ["c1-m0", "c1-m1"])
    assert (report.duplicate_replies, report.reposted_after_kill) == (1, 0)
    # and the failure says which reply, and when each copy came against the kill
    assert report.duplicates == [
        "chat 1 're c1-m0': copies at +1.50s, +5.50s from the last kill before"
    ]
    assert "chat 1 're c1-m0'" in report.violations()[0]


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


def test_without_a_recorded_output_a_rerun_counts_only_after_a_kill() -> None:
    fleet = _Fleet(killed_pids={10})
    for token, pid in (("c1-m0", 10), ("c1-m0", 11), ("c1-m1", 11), ("c1-m1", 12)):
        fleet.ran(token, pid, f"n{pid}")
    report = _tools(fleet, ["c1-m0", "c1-m1", "c1-m2"])
    assert report.tool_reruns_after_kill == 1
    assert report.tool_reruns == ["c1-m1 by [11, 12], the model saw []"]
    assert report.tools_missing == 1
    assert report.tool_results_unseen == 2, "a turn answers only after its tool's result"


def test_executions_before_the_recorded_one_were_never_recorded_and_may_rerun() -> None:
    # a live worker ran the tool but could not record it (Redis was down), another reran it
    fleet = _Fleet()
    fleet.ran("c1-m0", 11, "1")
    fleet.ran("c1-m0", 12, "2", recorded=True)
    report = _tools(fleet, ["c1-m0"])
    assert report.violations() == []
    assert report.tool_reruns_unrecorded == 1


def test_an_execution_after_the_recorded_one_is_a_completed_step_run_again() -> None:
    fleet = _Fleet(killed_pids={11})
    fleet.ran("c1-m0", 11, "1", recorded=True)
    fleet.ran("c1-m0", 12, "2")
    assert _tools(fleet, ["c1-m0"]).tool_reruns == ["c1-m0 by [11, 12], the model saw [11]"]


def test_two_recorded_outputs_of_one_step_are_a_completed_step_run_again() -> None:
    fleet = _Fleet()
    fleet.ran("c1-m0", 11, "1", recorded=True)
    fleet.ran("c1-m0", 12, "2", recorded=True)
    report = _tools(fleet, ["c1-m0"])
    assert report.tool_reruns == ["c1-m0 by [11, 12], the model saw [11, 12]"]
