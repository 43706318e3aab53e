from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Call

ORIGINAL = "def greet():\n    return 'hi'\n\n\ndef part():\n    return 'bye'\n"


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "app.py"
    path.write_text(ORIGINAL)
    return path


def test_edit_replaces_text_that_occurs_once(call: Call, source: Path) -> None:
    outcome = call("edit", path="app.py", edits=[{"old_text": "'hi'", "new_text": "'hello'"}])

    assert outcome.content == "applied 1 edit to app.py"
    assert source.read_text() == ORIGINAL.replace("'hi'", "'hello'")


def test_edit_matches_every_edit_against_the_original(call: Call, source: Path) -> None:
    edits = [
        {"old_text": "def greet", "new_text": "def part"},
        {"old_text": "def part", "new_text": "def leave"},
    ]

    outcome = call("edit", path="app.py", edits=edits)

    assert outcome.content == "applied 2 edits to app.py"
    assert source.read_text() == (
        "def part():\n    return 'hi'\n\n\ndef leave():\n    return 'bye'\n"
    ), "edit 2 should match the original 'def part', not the text edit 1 produced"


def test_edit_old_text_not_found_is_an_error(call: Call, source: Path) -> None:
    outcome = call("edit", path="app.py", edits=[{"old_text": "'howdy'", "new_text": "x"}])

    assert outcome.is_error
    assert "- edit 1: old_text not found" in outcome.content


def test_edit_ambiguous_old_text_is_an_error(call: Call, source: Path) -> None:
    outcome = call("edit", path="app.py", edits=[{"old_text": "return", "new_text": "yield"}])

    assert outcome.is_error
    assert "- edit 1: old_text found 2 times" in outcome.content


def test_edit_overlapping_edits_are_an_error(call: Call, source: Path) -> None:
    edits = [
        {"old_text": "def greet():", "new_text": "def a():"},
        {"old_text": "greet():\n    return 'hi'", "new_text": "b"},
    ]

    outcome = call("edit", path="app.py", edits=edits)

    assert outcome.is_error
    assert "- edit 2: overlaps edit 1" in outcome.content


def test_edit_failed_multi_edit_leaves_the_file_untouched(call: Call, source: Path) -> None:
    edits = [
        {"old_text": "'hi'", "new_text": "'hello'"},
        {"old_text": "'bye'", "new_text": "'ciao'"},
        {"old_text": "missing", "new_text": "x"},
    ]

    outcome = call("edit", path="app.py", edits=edits)

    assert outcome.is_error
    assert "no edits applied to app.py" in outcome.content
    assert "- edit 3: old_text not found" in outcome.content
    assert source.read_text() == ORIGINAL


def test_edit_missing_file_is_an_error(call: Call) -> None:
    outcome = call("edit", path="gone.py", edits=[{"old_text": "a", "new_text": "b"}])

    assert outcome.is_error
    assert outcome.content == "file not found: gone.py"


def test_edit_empty_edit_list_is_refused_by_the_schema(call: Call, source: Path) -> None:
    outcome = call("edit", path="app.py", edits=[])

    assert outcome.is_error
    assert "- edits:" in outcome.content


def test_edit_not_found_mentions_crlf_line_endings(call: Call, tmp_path: Path) -> None:
    (tmp_path / "win.txt").write_bytes(b"one\r\ntwo\r\n")

    outcome = call("edit", path="win.txt", edits=[{"old_text": "one\ntwo", "new_text": "x"}])

    assert outcome.is_error
    assert "(the file uses CRLF line endings)" in outcome.content
