from __future__ import annotations

from pathlib import Path

from .conftest import Call


def _touch(root: Path, *paths: str) -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")


def test_find_returns_matching_paths_relative_to_the_workspace(call: Call, tmp_path: Path) -> None:
    _touch(tmp_path, "setup.py", "src/app/main.py", "src/app/data.json", "src/util.py")

    outcome = call("find", pattern="**/*.py")

    assert outcome.content == "setup.py\nsrc/app/main.py\nsrc/util.py"


def test_find_in_a_subfolder_still_shows_workspace_paths(call: Call, tmp_path: Path) -> None:
    _touch(tmp_path, "src/app/main.py", "tests/test_main.py")

    outcome = call("find", pattern="*.py", path="src")

    assert outcome.content == "src/app/main.py"


def test_find_skips_git_folders(call: Call, tmp_path: Path) -> None:
    _touch(tmp_path, ".git/hooks/pre-commit.py", "a.py")

    assert call("find", pattern="**/*.py").content == "a.py"


def test_find_marks_folders(call: Call, tmp_path: Path) -> None:
    _touch(tmp_path, "tests/unit/test_a.py")

    assert call("find", pattern="test*").content == "tests/\ntests/unit/test_a.py"


def test_find_stops_at_the_limit_with_a_note(call: Call, tmp_path: Path) -> None:
    _touch(tmp_path, *(f"m{index}.py" for index in range(5)))

    outcome = call("find", pattern="*.py", limit=3)

    paths, note = outcome.content.split("\n\n")
    assert len(paths.splitlines()) == 3
    assert note == "[stopped at 3 paths; narrow the pattern or the path]"


def test_find_without_matches_says_so(call: Call, tmp_path: Path) -> None:
    _touch(tmp_path, "a.txt")

    outcome = call("find", pattern="*.rs")

    assert not outcome.is_error
    assert outcome.content == "no paths under . match '*.rs'"


def test_find_does_not_list_through_a_symlink_out_of_the_workspace(
    call: Call, tmp_path: Path
) -> None:
    (tmp_path / "etc_link").symlink_to("/etc")

    assert call("find", pattern="**/passwd").content == "no paths under . match '**/passwd'"
