from __future__ import annotations

import re
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from harness.agent.memory.notes import CUT_MARKER, append_note, log_path, memory_context
from harness.agent.memory.remember import RememberTool
from harness.tools import ToolContext, ToolRegistry

PARIS_SUMMER = timezone(timedelta(hours=2))
NOW = datetime(2026, 7, 6, 9, 14, 2, tzinfo=PARIS_SUMMER)


def test_append_note_creates_the_log_with_heading_and_entries(tmp_path: Path) -> None:
    path = append_note(tmp_path, "  The sister is Ada.  ", NOW)
    append_note(tmp_path, "Likes tea.", NOW.replace(hour=17, minute=40, second=55))

    assert path == tmp_path / "memory" / "2026-07-06.md"
    assert path.read_text() == (
        "# 2026-07-06\n\n### 09:14:02\nThe sister is Ada.\n\n### 17:40:55\nLikes tea.\n"
    )


def test_append_note_dates_the_log_in_the_callers_time_zone(tmp_path: Path) -> None:
    late_evening_in_utc = datetime(2026, 7, 5, 23, 30, tzinfo=UTC)

    path = append_note(tmp_path, "x", late_evening_in_utc.astimezone(PARIS_SUMMER))

    assert path.name == "2026-07-06.md"
    assert "### 01:30:00" in path.read_text()


@pytest.mark.parametrize(
    ("note", "now"),
    [("   ", NOW), ("fine", NOW.replace(tzinfo=None))],
    ids=["blank-note", "naive-time"],
)
def test_append_note_rejects_bad_input(tmp_path: Path, note: str, now: datetime) -> None:
    with pytest.raises(ValueError):
        append_note(tmp_path, note, now)

    assert not (tmp_path / "memory").exists() or not any((tmp_path / "memory").iterdir())


def test_append_note_concurrent_appends_stay_whole(tmp_path: Path) -> None:
    writers, per_writer = 8, 25
    barrier = threading.Barrier(writers)

    def write(writer: int) -> None:
        barrier.wait()
        for i in range(per_writer):
            append_note(tmp_path, f"writer {writer} note {i} " + "x" * 500, NOW)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    text = log_path(tmp_path, NOW.date()).read_text()
    assert text.count("# 2026-07-06\n") == 1, "the heading must be written exactly once"
    entries = re.findall(r"\n### 09:14:02\nwriter (\d+) note (\d+) x{500}\n", text)
    assert len(entries) == writers * per_writer, "every entry must be present and intact"
    assert len(set(entries)) == writers * per_writer
    assert text == "# 2026-07-06\n" + "".join(
        f"\n### 09:14:02\nwriter {w} note {i} {'x' * 500}\n" for w, i in entries
    ), "nothing but whole entries may follow the heading"


def test_memory_context_joins_memory_yesterday_and_today(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("# Memory\n\nLong fact.\n")
    append_note(tmp_path, "old day", NOW - timedelta(days=2))
    append_note(tmp_path, "yesterday's note", NOW - timedelta(days=1))
    append_note(tmp_path, "today's note", NOW)

    text = memory_context(tmp_path, NOW)

    assert "old day" not in text
    order = [text.index(s) for s in ("Long fact.", "yesterday's note", "today's note")]
    assert order == sorted(order), f"expected MEMORY.md, yesterday, today in order:\n{text}"
    assert "### Today's log, 2026-07-06 (memory/2026-07-06.md)" in text


def test_memory_context_is_empty_without_memory(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("  \n")

    assert memory_context(tmp_path, NOW) == ""


def test_memory_context_over_the_cap_keeps_the_newest_lines(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("OLDEST\n" + "filler line\n" * 200)
    for i in range(40):
        append_note(tmp_path, f"note {i:02d}", NOW)

    full = memory_context(tmp_path, NOW, cap=100_000)
    text = memory_context(tmp_path, NOW, cap=600)

    assert len(full) > 600
    assert len(text) <= 600
    assert text.startswith(CUT_MARKER)
    kept = text[len(CUT_MARKER) :]
    assert full.endswith(kept), "the kept text must be the newest part, unchanged"
    assert full[len(full) - len(kept) - 1] == "\n", "the kept text must start at a line boundary"
    assert "note 39" in kept
    assert "OLDEST" not in kept


def test_remember_tool_appends_through_the_registry(tmp_path: Path) -> None:
    registry = ToolRegistry([RememberTool()])
    ctx = ToolContext(workspace=tmp_path, extras={"now": lambda: NOW})

    outcome = registry.execute("remember", '{"note": "The dentist is on 2026-07-14."}', ctx)

    assert not outcome.is_error, outcome.content
    assert outcome.content == "Noted in memory/2026-07-06.md"
    log = log_path(tmp_path, NOW.date()).read_text()
    assert "### 09:14:02\nThe dentist is on 2026-07-14.\n" in log


def test_remember_tool_without_a_clock_uses_utc_today(tmp_path: Path) -> None:
    registry = ToolRegistry([RememberTool()])

    before = datetime.now(UTC).date()
    outcome = registry.execute("remember", {"note": "x"}, ToolContext(workspace=tmp_path))
    after = datetime.now(UTC).date()

    assert outcome.content in (f"Noted in memory/{d.isoformat()}.md" for d in (before, after))


@pytest.mark.parametrize(
    "arguments", [{"note": "   "}, {"note": "x" * 2001}, {}], ids=["blank", "too-long", "missing"]
)
def test_remember_tool_rejects_invalid_notes(tmp_path: Path, arguments: dict[str, str]) -> None:
    registry = ToolRegistry([RememberTool()])

    outcome = registry.execute("remember", arguments, ToolContext(workspace=tmp_path))

    assert outcome.is_error
    assert "invalid arguments" in outcome.content
    assert not (tmp_path / "memory").exists()


def test_remember_tool_reports_a_naive_clock(tmp_path: Path) -> None:
    registry = ToolRegistry([RememberTool()])
    ctx = ToolContext(workspace=tmp_path, extras={"now": lambda: NOW.replace(tzinfo=None)})

    outcome = registry.execute("remember", {"note": "x"}, ctx)

    assert outcome.is_error
    assert "misconfigured" in outcome.content
