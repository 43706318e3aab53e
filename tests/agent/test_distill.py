"""Positions, decisions and answer checks of the distillation, without a model."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness.agent.memory.distill import (
    DistillState,
    PendingLogs,
    Thresholds,
    advance,
    check_candidate,
    clean_candidate,
    decide,
    pending_logs,
)
from harness.agent.memory.notes import append_note, log_path
from harness.agent.memory.remember import RememberTool
from harness.tools.base import ToolContext, ToolRegistry

NOW = datetime(2027, 1, 15, 10, 0, tzinfo=UTC)


def test_pending_logs_sends_each_entry_once(tmp_path: Path) -> None:
    # Given a note that was distilled, then a second one
    append_note(tmp_path, "first", NOW)
    state = advance(DistillState(), pending_logs(tmp_path, DistillState()), NOW)
    append_note(tmp_path, "second", NOW + timedelta(minutes=1))
    # When the new entries are read
    pending = pending_logs(tmp_path, state)
    # Then only the second is there
    text = "".join(c.text for c in pending.chunks)
    assert "second" in text and "first" not in text


def test_a_log_edited_by_hand_is_sent_again_from_its_start(tmp_path: Path) -> None:
    append_note(tmp_path, "the dentist is Dr Lopes", NOW)
    state = advance(DistillState(), pending_logs(tmp_path, DistillState()), NOW)
    path = log_path(tmp_path, NOW.date())
    path.write_text(path.read_text().replace("Lopes", "Lopez"))
    pending = pending_logs(tmp_path, state)
    assert [c.start for c in pending.chunks] == [0]
    assert "Dr Lopez" in pending.chunks[0].text


def test_a_large_backlog_is_sent_in_batches_cut_between_entries(tmp_path: Path) -> None:
    # Given 3 KB of notes and a 1 KB batch
    for i in range(30):
        append_note(tmp_path, f"note {i:02d} " + "x" * 80, NOW + timedelta(seconds=i))
    state = DistillState()
    seen: list[str] = []
    # When batches are distilled until nothing is pending
    for _ in range(10):
        pending = pending_logs(tmp_path, state, batch_bytes=1000)
        if not pending.chunks:
            break
        assert all(c.text.lstrip().startswith(("# ", "### ")) for c in pending.chunks)
        seen += [c.text for c in pending.chunks]
        state = advance(state, pending, NOW)
    # Then every note went out exactly once, in several batches
    joined = "".join(seen)
    assert len(seen) > 2
    assert all(joined.count(f"note {i:02d} ") == 1 for i in range(30))


def test_concurrent_remember_calls_and_distillations_lose_nothing(tmp_path: Path) -> None:
    # Given eight sessions calling remember at once while distillations keep reading the log
    registry = ToolRegistry()
    registry.register(RememberTool())
    stop = threading.Event()
    distilled: list[str] = []

    def session(n: int) -> None:
        ctx = ToolContext(workspace=tmp_path, cancel=threading.Event(), extras={"now": lambda: NOW})
        for i in range(25):
            outcome = registry.execute("remember", {"note": f"session {n} fact {i}"}, ctx)
            assert not outcome.is_error, outcome.content

    def distiller() -> None:
        state = DistillState()
        while True:
            finished = stop.is_set()
            pending = pending_logs(tmp_path, state)
            distilled.extend(c.text for c in pending.chunks)
            state = advance(state, pending, NOW)
            if finished:
                return

    reader = threading.Thread(target=distiller)
    reader.start()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(session, range(8)))
    stop.set()
    reader.join()
    # Then every note is in the log once, and was handed to a distillation exactly once
    log = log_path(tmp_path, NOW.date()).read_text()
    joined = "".join(distilled)
    for n in range(8):
        for i in range(25):
            assert log.count(f"session {n} fact {i}\n") == 1, f"session {n} fact {i} in the log"
            assert joined.count(f"session {n} fact {i}\n") == 1, f"session {n} fact {i} sent"


def test_decide_waits_for_bytes_or_age() -> None:
    thresholds = Thresholds(min_bytes=100, max_age=timedelta(hours=8))
    state = DistillState(last_distilled_at=NOW)
    small = PendingLogs(total_bytes=50)
    assert not decide(small, state, NOW + timedelta(hours=1), thresholds).due
    assert decide(small, state, NOW + timedelta(hours=8), thresholds).due
    assert decide(PendingLogs(total_bytes=101), state, NOW + timedelta(minutes=1), thresholds).due
    assert not decide(PendingLogs(total_bytes=0), state, NOW + timedelta(days=9), thresholds).due
    assert decide(PendingLogs(total_bytes=0), state, NOW, thresholds, force=True).due


def test_check_candidate_refuses_shrinks_and_apologies() -> None:
    current = "# Memory\n" + "- a fact worth keeping\n" * 10
    assert check_candidate(current + "- one more\n", current, 0.5) is None
    assert "drop" in str(check_candidate("# Memory\n- a fact\n", current, 0.5))
    assert "empty" in str(check_candidate("  \n", current, 0.5))
    assert check_candidate("Sorry, I can't do that.", "", 0.5) is not None
    assert check_candidate("# Memory\n- new\n", "", 0.5) is None


def test_clean_candidate_unwraps_a_fenced_document() -> None:
    assert clean_candidate("```markdown\n# Memory\n- x\n```") == "# Memory\n- x\n"
    assert clean_candidate("# Memory\n\n```sh\nls\n```\n- y") == "# Memory\n\n```sh\nls\n```\n- y\n"
