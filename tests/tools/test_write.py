from __future__ import annotations

import stat
from pathlib import Path

from .conftest import Call


def test_write_creates_the_file_and_its_parent_folders(call: Call, tmp_path: Path) -> None:
    outcome = call("write", path="a/b/c.txt", content="héllo\n")

    assert outcome.content == "wrote 7 bytes to a/b/c.txt"
    assert (tmp_path / "a" / "b" / "c.txt").read_text() == "héllo\n"


def test_write_replaces_an_existing_file_keeping_its_mode(call: Call, tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("old")
    script.chmod(0o755)

    outcome = call("write", path="run.sh", content="new")

    assert not outcome.is_error
    assert script.read_text() == "new"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


def test_write_leaves_no_temporary_file_behind(call: Call, tmp_path: Path) -> None:
    call("write", path="a.txt", content="one")
    call("write", path="a.txt", content="two")

    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_write_to_a_directory_is_an_error(call: Call, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()

    outcome = call("write", path="src", content="x")

    assert outcome.is_error
    assert "src is a directory" in outcome.content
