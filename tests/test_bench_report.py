"""`bench/report.py`: the generated section replaces only what lies between its markers, and a
quick run writes its figures and its section."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.report import BEGIN, END, write_section
from bench.report_figures import TIMES, turns_per_worker

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_write_section_replaces_only_the_text_between_the_markers(tmp_path: Path) -> None:
    # Given a benchmarks page with hand-written sections around an old generated one
    page = tmp_path / "benchmarks.md"
    page.write_text(
        f"# Benchmarks\n\nhand-written before\n\n{BEGIN}\nold figures\n{END}\n\nafter\n"
    )
    # When a new section is written
    write_section(page, f"{BEGIN}\nnew figures\n{END}")
    # Then the old one is gone, the new one is there once, and the rest is untouched
    text = page.read_text()
    assert "old figures" not in text
    assert text.count(BEGIN) == 1 and text.count("new figures") == 1
    assert text.startswith("# Benchmarks\n\nhand-written before\n\n")
    assert text.endswith(f"{END}\n\nafter\n")


def test_write_section_appends_when_the_page_has_no_markers_yet(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\nhand-written\n")
    write_section(page, f"{BEGIN}\nfigures\n{END}")
    assert page.read_text() == f"# Benchmarks\n\nhand-written\n\n{BEGIN}\nfigures\n{END}\n"


@pytest.mark.integration
@pytest.mark.bench
@pytest.mark.timeout(600)
def test_quick_report_writes_its_figures_and_section(tmp_path: Path) -> None:
    # Given a page with a hand-written section and no report yet
    page = tmp_path / "docs" / "benchmarks.md"
    page.parent.mkdir()
    page.write_text("# Benchmarks\n\n## By hand\n\nkept as it is\n")
    # When the report runs in quick mode on one of its benchmarks (the agent's: no subprocess
    # fleet, so the test stays short; `python -m bench.report --quick` runs them all)
    done = subprocess.run(
        [sys.executable, "-m", "bench.report", "--quick", "--only", "agent",
         "--markdown", str(page)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    # Then its figure is a PNG file beside the page, linked from the generated section,
    # which names the machine; the hand-written section is still there
    text = page.read_text()
    figure = tmp_path / "docs" / "benchmarks" / "tokens_per_turn.png"
    assert figure.read_bytes().startswith(PNG_MAGIC), f"{figure} is not a PNG"
    assert "](benchmarks/tokens_per_turn.png)" in text, "the figure is not linked"
    assert "## By hand\n\nkept as it is" in text
    section = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert "Machine:" in section and "cores" in section, section
    assert "Not measured" not in section, section


def test_turns_table_sets_each_run_against_its_wire_floor(tmp_path: Path) -> None:
    # Given two webhook runs, one recorded before the wire floor was measured
    runs = [
        {"workers": 2, "turns_per_s": 40.0, "floor": {"tasks_per_s": 800.0}},
        {
            "workers": 1,
            "turns_per_s": 30.0,
            "floor": {"tasks_per_s": 600.0},
            "wire_floor": {"turn_over_floor": 3.456},
        },
    ]
    # When the section's table is rendered
    text = turns_per_worker(runs, tmp_path / "t.png", tmp_path, "test machine")
    # Then each row, in worker order, shows its ratio to the wire floor where there is one
    rows = [line for line in text.splitlines() if line.startswith(("| 1 ", "| 2 "))]
    assert rows[0].rstrip(" |").endswith(f"3.46{TIMES}"), rows
    assert rows[1].rstrip(" |").endswith("-"), rows
