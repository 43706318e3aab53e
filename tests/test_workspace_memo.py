"""`harness.workspace_memo`: a value made from workspace files is reused only while the files
are the very ones it was made from, and never through a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.workspace_files import read_optional_text
from harness.workspace_memo import Memo, files_stamp, folder_stamp, joined


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace holding USER.md and skills/a.md, and beside it an outside secret."""
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    (workspace / "skills").mkdir(parents=True)
    outside.mkdir()
    (workspace / "USER.md").write_text("The user is Grace.")
    (workspace / "skills" / "a.md").write_text("skill a")
    (outside / "secret.txt").write_text("SECRET")
    return workspace, outside


class UserFile:
    """USER.md of a workspace read through its own memo, counting the real reads."""

    def __init__(self, workspace: Path) -> None:
        self.workspace, self.reads = workspace, 0
        self.memo: Memo[str] = Memo()

    def value(self) -> str:
        stamp = files_stamp(self.workspace, ["USER.md"])
        return self.memo.get("USER.md", stamp, self._read)

    def _read(self) -> str:
        self.reads += 1
        return read_optional_text(self.workspace, "USER.md")


@pytest.fixture
def user(layout: tuple[Path, Path]) -> UserFile:
    """The workspace's USER.md behind a memo of its own."""
    return UserFile(layout[0])


def test_memo_unchanged_settled_file_is_read_once(user: UserFile, settled_files: None) -> None:
    # Given a memo and an unchanged file
    # When its value is asked for three times
    values = [user.value() for _ in range(3)]
    # Then the file was read once and every answer is its text
    assert values == ["The user is Grace."] * 3
    assert user.reads == 1, f"expected one read of an unchanged file, got {user.reads}"


def test_memo_file_replaced_with_same_size_and_mtime_is_read_again(
    user: UserFile, settled_files: None
) -> None:
    # Given the value of USER.md, kept
    user.value()
    # When it is replaced by a file of the same size given the old modification time
    old = os.stat(user.workspace / "USER.md")
    (user.workspace / "new.tmp").write_text("The user is Alice.")
    os.utime(user.workspace / "new.tmp", ns=(old.st_atime_ns, old.st_mtime_ns))
    os.replace(user.workspace / "new.tmp", user.workspace / "USER.md")
    # Then the next value is the new text (a (path, mtime, size) key would have missed it)
    assert user.value() == "The user is Alice."


def test_memo_file_written_in_place_is_read_again(user: UserFile, settled_files: None) -> None:
    # Given the value of USER.md, kept
    user.value()
    # When the agent appends to it, as its previous tool call would
    with open(user.workspace / "USER.md", "a") as handle:
        handle.write(" She likes tea.")
    # Then the next value has the appended text
    assert user.value() == "The user is Grace. She likes tea."


def test_memo_just_written_file_is_read_every_time(user: UserFile) -> None:
    # Given a file written this instant (its change time within `SETTLE_NS` of now)
    # When its value is asked for twice
    user.value()
    user.value()
    # Then both read it: a second write in the same clock tick could leave the same stamp
    assert user.reads == 2, "a file changed within the settle time must not be kept"
    assert len(user.memo) == 0


def test_memo_file_replaced_by_a_link_out_is_refused_as_before(
    layout: tuple[Path, Path],
    user: UserFile,
    settled_files: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given the value of USER.md, kept
    workspace, outside = layout
    user.value()
    # When USER.md becomes a link to the outside secret
    (workspace / "USER.md").unlink()
    (workspace / "USER.md").symlink_to(outside / "secret.txt")
    # Then it gives no stamp, so the loader runs and refuses the link with its warning
    assert files_stamp(workspace, ["USER.md"]) is None
    assert user.value() == ""
    assert "symbolic link" in caplog.text


def test_stamps_refuse_a_linked_folder_on_the_way(layout: tuple[Path, Path]) -> None:
    # Given skills/ replaced by a link to the outside folder
    workspace, outside = layout
    (workspace / "skills" / "a.md").unlink()
    (workspace / "skills").rmdir()
    (workspace / "skills").symlink_to(outside)
    # When / Then neither a file below it nor the folder itself has a stamp
    assert files_stamp(workspace, ["skills/secret.txt"]) is None
    assert folder_stamp(workspace, "skills") is None


def test_stamps_refuse_a_hard_linked_file(layout: tuple[Path, Path]) -> None:
    # Given skills/b.md hard-linked to the outside secret
    workspace, outside = layout
    os.link(outside / "secret.txt", workspace / "skills" / "b.md")
    # When / Then neither the file nor its folder has a stamp
    assert files_stamp(workspace, ["skills/b.md"]) is None
    assert folder_stamp(workspace, "skills") is None


def test_folder_stamp_changes_with_an_added_or_written_file(
    layout: tuple[Path, Path], settled_files: None
) -> None:
    # Given the stamp of skills/
    workspace, _ = layout
    before = folder_stamp(workspace, "skills")
    # When a file is added, then one is written
    (workspace / "skills" / "b.md").write_text("skill b")
    added = folder_stamp(workspace, "skills")
    (workspace / "skills" / "a.md").write_text("skill a, longer")
    written = folder_stamp(workspace, "skills")
    # Then each stamp differs from the one before, and an unchanged folder's stays equal
    assert before != added != written
    assert folder_stamp(workspace, "skills") == written


def test_missing_files_and_folders_have_a_stamp(tmp_path: Path, settled_files: None) -> None:
    # Given an empty workspace
    # When missing files (one in a missing folder) and a missing folder are stamped
    files = files_stamp(tmp_path, ["SOUL.md", "memory/today.md"])
    folder = folder_stamp(tmp_path, "skills")
    # Then each has a settled stamp, which a created file changes
    assert files is not None and files.settled
    assert folder is not None and folder.settled
    assert not files_stamp(tmp_path, ["SOUL.md"]).exists  # type: ignore[union-attr]
    (tmp_path / "SOUL.md").write_text("calm")
    assert files_stamp(tmp_path, ["SOUL.md", "memory/today.md"]) != files


def test_joined_stamp_is_none_when_one_part_is(layout: tuple[Path, Path]) -> None:
    # Given one stamp and one refusal
    workspace, _ = layout
    stamp = folder_stamp(workspace, "skills")
    # When / Then joined they give no stamp; two equal parts give equal joins
    assert joined(stamp, None) is None
    assert joined(stamp, stamp) == joined(stamp, stamp)


def test_memo_keeps_at_most_max_entries_dropping_the_least_recent(
    layout: tuple[Path, Path], settled_files: None
) -> None:
    # Given a memo of two entries holding keys "a" and "b", "a" used last
    workspace, _ = layout
    memo: Memo[str] = Memo(max_entries=2)
    stamp = files_stamp(workspace, ["USER.md"])
    loads: list[str] = []

    def get(key: str) -> str:
        return memo.get(key, stamp, lambda: loads.append(key) or key)

    get("a"), get("b"), get("a")
    # When a third key is kept
    get("c")
    # Then the memo holds two, and "b" (least recently used) is the one loaded again
    assert len(memo) == 2
    get("a"), get("b")
    assert loads == ["a", "b", "c", "b"]


def test_memo_keeps_nothing_when_load_raises(
    layout: tuple[Path, Path], settled_files: None
) -> None:
    # Given a loader that fails
    workspace, _ = layout
    memo: Memo[str] = Memo()
    stamp = files_stamp(workspace, ["USER.md"])

    def fail() -> str:
        raise PermissionError("unreadable")

    # When / Then its error propagates, and nothing is kept
    with pytest.raises(PermissionError):
        memo.get("USER.md", stamp, fail)
    assert len(memo) == 0
