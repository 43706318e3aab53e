"""`harness.workspace_files`: no fleet-side open follows a link below the trusted folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness import workspace_files as wf
from harness.workspace_files import UnsafePathError


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and, beside it, an outside folder holding a secret file."""
    workspace = tmp_path / "workspace"
    outside = tmp_path / "outside"
    (workspace / "memory").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET")
    return workspace, outside


def test_read_refuses_a_final_link_out(layout: tuple[Path, Path]) -> None:
    # Given IDENTITY.md -> ../outside/secret.txt
    workspace, outside = layout
    (workspace / "IDENTITY.md").symlink_to(outside / "secret.txt")
    # When / Then reading it is refused
    with pytest.raises(UnsafePathError, match="symbolic link"):
        wf.read_text(workspace, "IDENTITY.md")


def test_read_refuses_a_linked_folder_on_the_way(layout: tuple[Path, Path]) -> None:
    # Given skills -> ../outside, so skills/secret.txt is the outside file
    workspace, outside = layout
    (workspace / "skills").symlink_to(outside)
    # When / Then reading through the linked folder is refused
    with pytest.raises(UnsafePathError, match="skills"):
        wf.read_bytes(workspace, "skills/secret.txt")


def test_read_refuses_a_link_that_stays_inside(layout: tuple[Path, Path]) -> None:
    # Given a link to a file inside the workspace (documented: no link is followed)
    workspace, _ = layout
    (workspace / "real.md").write_text("inside")
    (workspace / "alias.md").symlink_to("real.md")
    # When / Then it is refused all the same, while the file itself reads
    with pytest.raises(UnsafePathError):
        wf.read_text(workspace, "alias.md")
    assert wf.read_text(workspace, "real.md") == "inside"


def test_read_refuses_a_file_with_several_hard_links(layout: tuple[Path, Path]) -> None:
    # Given a workspace file hard-linked to an outside file
    workspace, outside = layout
    os.link(outside / "secret.txt", workspace / "USER.md")
    # When / Then reading it is refused
    with pytest.raises(UnsafePathError, match="hard links"):
        wf.read_text(workspace, "USER.md")


def test_paths_that_leave_lexically_are_refused(layout: tuple[Path, Path]) -> None:
    # Given the workspace
    workspace, _ = layout
    # When / Then `..` and absolute paths are refused before anything is opened
    with pytest.raises(UnsafePathError, match=r"\.\."):
        wf.read_text(workspace, "../outside/secret.txt")
    with pytest.raises(UnsafePathError, match="not a path relative"):
        wf.read_text(workspace, "/etc/passwd")


def test_optional_read_skips_a_link_with_a_warning(
    layout: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    # Given SOUL.md linked out, and no USER.md
    workspace, outside = layout
    (workspace / "SOUL.md").symlink_to(outside / "secret.txt")
    # When reading both as optional prompt files
    soul = wf.read_optional_text(workspace, "SOUL.md", "prompt file")
    user = wf.read_optional_text(workspace, "USER.md", "prompt file")
    # Then both are empty, and the link is named in one warning
    assert (soul, user) == ("", "")
    assert [r.getMessage() for r in caplog.records if "SOUL.md" in r.getMessage()], caplog.text


def test_append_refuses_a_final_link_and_a_linked_folder(layout: tuple[Path, Path]) -> None:
    # Given memory/today.md linked to an outside file, and logs/ linked to the outside folder
    workspace, outside = layout
    (workspace / "memory" / "today.md").symlink_to(outside / "secret.txt")
    (workspace / "logs").symlink_to(outside)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    # When / Then appending through either is refused, and nothing outside changes
    with pytest.raises(UnsafePathError):
        wf.open_fd(workspace, "memory/today.md", flags, create_parents=True)
    with pytest.raises(UnsafePathError):
        wf.open_fd(workspace, "logs/new.md", flags, create_parents=True)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "SECRET"


def test_append_refuses_a_hard_linked_file(layout: tuple[Path, Path]) -> None:
    # Given a log hard-linked to an outside file
    workspace, outside = layout
    os.link(outside / "secret.txt", workspace / "memory" / "today.md")
    # When / Then opening it to append is refused
    with pytest.raises(UnsafePathError, match="hard links"):
        wf.open_fd(workspace, "memory/today.md", os.O_WRONLY | os.O_APPEND)
    assert (outside / "secret.txt").read_text() == "SECRET"


def test_write_replace_replaces_a_link_instead_of_writing_through_it(
    layout: tuple[Path, Path],
) -> None:
    # Given memory/.distilled.json linked to an outside file
    workspace, outside = layout
    (workspace / "memory" / ".distilled.json").symlink_to(outside / "secret.txt")
    # When replacing it
    wf.write_replace(workspace, "memory/.distilled.json", b"{}")
    # Then the link itself is replaced by a file; the outside file is untouched
    assert not (workspace / "memory" / ".distilled.json").is_symlink()
    assert (workspace / "memory" / ".distilled.json").read_bytes() == b"{}"
    assert (outside / "secret.txt").read_text() == "SECRET"


def test_write_replace_refuses_a_linked_folder(layout: tuple[Path, Path]) -> None:
    # Given inbox -> the outside folder
    workspace, outside = layout
    (workspace / "inbox").symlink_to(outside)
    # When / Then writing a file under it (or making folders there) is refused
    with pytest.raises(UnsafePathError, match="inbox"):
        wf.write_replace(workspace, "inbox/chat/photo.jpg", b"jpeg")
    with pytest.raises(UnsafePathError, match="inbox"):
        wf.make_folders(workspace, "inbox/chat")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_write_replace_makes_folders_and_keeps_the_mode(layout: tuple[Path, Path]) -> None:
    # Given an existing file with mode 600
    workspace, _ = layout
    (workspace / "memory" / "a.md").write_text("old")
    (workspace / "memory" / "a.md").chmod(0o600)
    # When replacing it and writing a file in new folders
    wf.write_replace(workspace, "memory/a.md", b"new")
    wf.write_replace(workspace, "x/y/z.md", b"z")
    # Then both hold the new content, the mode is kept, and no temporary file is left
    assert (workspace / "memory" / "a.md").read_text() == "new"
    assert (workspace / "memory" / "a.md").stat().st_mode & 0o777 == 0o600
    assert (workspace / "x" / "y" / "z.md").read_text() == "z"
    assert sorted(p.name for p in (workspace / "memory").iterdir()) == ["a.md"]


def test_create_exclusively_never_replaces_a_link(layout: tuple[Path, Path]) -> None:
    # Given SOUL.md is a link out
    workspace, outside = layout
    (workspace / "SOUL.md").symlink_to(outside / "secret.txt")
    # When creating SOUL.md and USER.md exclusively
    created_soul = wf.create_exclusively(workspace, "SOUL.md", b"soul")
    created_user = wf.create_exclusively(workspace, "USER.md", b"user")
    # Then the link is left alone (nothing written through it), USER.md is made
    assert (created_soul, created_user) == (False, True)
    assert (outside / "secret.txt").read_text() == "SECRET"
    assert (workspace / "USER.md").read_text() == "user"


def test_listing_names_links_and_refuses_a_linked_folder(layout: tuple[Path, Path]) -> None:
    # Given skills/ with a file, a link and a folder; and skills2 -> outside
    workspace, outside = layout
    skills = workspace / "skills"
    (skills / "sub").mkdir(parents=True)
    (skills / "a.md").write_text("a")
    (skills / "b.md").symlink_to(outside / "secret.txt")
    (workspace / "skills2").symlink_to(outside)
    # When listing
    listed = wf.entries(workspace, "skills")
    files = wf.files_in(workspace, "skills")
    # Then each entry has its kind, links are no files, and the linked folder is refused
    assert listed == [("a.md", "file"), ("b.md", "link"), ("sub", "folder")]
    assert files == ["a.md"]
    assert wf.entries(workspace, "missing") == []
    with pytest.raises(UnsafePathError):
        wf.entries(workspace, "skills2")


def test_relative_in_refuses_a_path_outside_the_root(layout: tuple[Path, Path]) -> None:
    # Given the workspace and paths computed from it
    workspace, outside = layout
    # When / Then a path below it is made relative, one outside (or going up) is refused
    assert str(wf.relative_in(workspace, workspace / "inbox" / "a.jpg")) == "inbox/a.jpg"
    with pytest.raises(UnsafePathError):
        wf.relative_in(workspace, outside / "secret.txt")
    with pytest.raises(UnsafePathError):
        wf.relative_in(workspace, workspace / ".." / "outside" / "secret.txt")
