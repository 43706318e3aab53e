from __future__ import annotations

from pathlib import Path

from .conftest import Call


def test_grep_reports_file_line_and_text(call: Call, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import os\nprint(os.getcwd())\n")
    (tmp_path / "b.txt").write_text("nothing here\n")

    outcome = call("grep", pattern=r"os\.\w+")

    assert outcome.content == "a.py:2: print(os.getcwd())"


def test_grep_ignore_case_and_literal(call: Call, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Total (USD)\ntotal usd\n")

    outcome = call("grep", pattern="total (usd)", ignore_case=True, literal=True)

    assert outcome.content == "a.txt:1: Total (USD)"


def test_grep_shows_context_and_separates_groups(call: Call, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))

    outcome = call("grep", pattern="line (3|8)$", context=1)

    assert outcome.content.splitlines() == [
        "a.txt-2- line 2",
        "a.txt:3: line 3",
        "a.txt-4- line 4",
        "--",
        "a.txt-7- line 7",
        "a.txt:8: line 8",
        "a.txt-9- line 9",
    ]


def test_grep_glob_filters_files(call: Call, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("TODO py\n")
    (tmp_path / "src" / "a.md").write_text("TODO md\n")

    assert call("grep", pattern="TODO", glob="*.py").content == "src/a.py:1: TODO py"


def test_grep_skips_binary_files_and_git(call: Call, tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("needle\n")
    (tmp_path / "blob.bin").write_bytes(b"needle\x00\x01")
    (tmp_path / "a.txt").write_text("needle\n")

    assert call("grep", pattern="needle").content == "a.txt:1: needle"


def test_grep_does_not_read_through_a_symlink_out_of_the_workspace(
    call: Call, tmp_path: Path
) -> None:
    (tmp_path / "passwd_link").symlink_to("/etc/passwd")
    (tmp_path / "etc_link").symlink_to("/etc")

    outcome = call("grep", pattern="root")

    assert outcome.content == "no matches for 'root' in ."


def test_grep_invalid_regex_is_an_error(call: Call, tmp_path: Path) -> None:
    outcome = call("grep", pattern="(unclosed")

    assert outcome.is_error
    assert "invalid regular expression '(unclosed'" in outcome.content


def test_grep_stops_at_the_match_limit_with_a_note(call: Call, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hit\n" * 150)

    outcome = call("grep", pattern="hit")

    rows, note = outcome.content.split("\n\n")
    assert len(rows.splitlines()) == 100
    assert note == "[stopped at 100 matches; narrow the search]"


def test_grep_cuts_long_lines(call: Call, tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("needle" + "x" * 1000 + "\n")

    outcome = call("grep", pattern="needle")

    assert outcome.content == "min.js:1: needle" + "x" * 494 + " [line cut]"


def test_grep_caps_output_at_50_kb(call: Call, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(("hit " + "y" * 300 + "\n") * 1000)

    outcome = call("grep", pattern="hit", limit=1000)

    rows, note = outcome.content.split("\n\n")
    assert len(rows.encode()) <= 50 * 1024
    assert note == "[output cut at 50 KB; narrow the search]"


def test_grep_without_matches_is_not_an_error(call: Call, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hay\n")

    outcome = call("grep", pattern="needle")

    assert not outcome.is_error
    assert outcome.content == "no matches for 'needle' in ."
