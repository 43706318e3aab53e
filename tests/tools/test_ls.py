from __future__ import annotations

from pathlib import Path

from .conftest import Call


def test_ls_lists_sorted_entries_with_folders_marked(call: Call, tmp_path: Path) -> None:
    for name in ("b.txt", ".env", "a.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "src").mkdir()

    outcome = call("ls")

    assert outcome.content == ".env\na.txt\nb.txt\nsrc/"


def test_ls_stops_at_the_limit_with_a_note(call: Call, tmp_path: Path) -> None:
    for index in range(12):
        (tmp_path / f"f{index:02}").write_text("")

    outcome = call("ls", limit=10)

    listing, note = outcome.content.split("\n\n")
    assert listing.splitlines() == [f"f{index:02}" for index in range(10)]
    assert note == "[showing 10 of 12 entries]"


def test_ls_of_a_file_is_an_error(call: Call, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("")

    outcome = call("ls", path="a.txt")

    assert outcome.is_error
    assert "a.txt is a file" in outcome.content


def test_ls_of_a_missing_folder_is_an_error(call: Call) -> None:
    outcome = call("ls", path="nope")

    assert outcome.is_error
    assert outcome.content == "folder not found: nope"
