from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.tools import WorkspaceEscapeError, resolve_in_workspace

from .conftest import Call


def test_resolve_in_workspace_takes_relative_paths_from_the_workspace(tmp_path: Path) -> None:
    assert resolve_in_workspace(tmp_path, "a/b.txt") == tmp_path.resolve() / "a" / "b.txt"


def test_resolve_in_workspace_accepts_an_absolute_path_inside(tmp_path: Path) -> None:
    inside = tmp_path / "a.txt"

    assert resolve_in_workspace(tmp_path, str(inside)) == inside.resolve()


def test_resolve_in_workspace_accepts_dotdot_that_stays_inside(tmp_path: Path) -> None:
    assert resolve_in_workspace(tmp_path, "a/../b.txt") == tmp_path.resolve() / "b.txt"


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/passwd"])
def test_resolve_in_workspace_refuses_paths_outside(tmp_path: Path, path: str) -> None:
    with pytest.raises(WorkspaceEscapeError, match="outside the workspace"):
        resolve_in_workspace(tmp_path, path)


def test_resolve_in_workspace_refuses_a_symlink_pointing_out(tmp_path: Path) -> None:
    (tmp_path / "etc").symlink_to("/etc")

    with pytest.raises(WorkspaceEscapeError, match="outside the workspace"):
        resolve_in_workspace(tmp_path, "etc/passwd")


ESCAPES = ["../escaped.txt", "/etc/passwd", "etc_link/passwd"]
FOLDER_ESCAPES = ["..", "/etc", "etc_link"]


def _arguments(tool: str, path: str) -> dict[str, Any]:
    arguments: dict[str, dict[str, Any]] = {
        "read": {"path": path},
        "write": {"path": path, "content": "pwned"},
        "edit": {"path": path, "edits": [{"old_text": "root", "new_text": "toor"}]},
        "ls": {"path": path},
        "find": {"pattern": "*", "path": path},
        "grep": {"pattern": "root", "path": path},
    }
    return arguments[tool]


@pytest.mark.parametrize("path", ESCAPES)
@pytest.mark.parametrize("tool", ["read", "write", "edit", "grep"])
def test_file_tools_refuse_paths_outside_the_workspace(
    call: Call, tmp_path: Path, tool: str, path: str
) -> None:
    (tmp_path / "etc_link").symlink_to("/etc")

    outcome = call(tool, **_arguments(tool, path))

    assert outcome.is_error, f"{tool} should refuse {path}, got {outcome.content!r}"
    assert "outside the workspace" in outcome.content
    assert not (tmp_path.parent / "escaped.txt").exists(), "nothing may be written outside"


@pytest.mark.parametrize("path", FOLDER_ESCAPES)
@pytest.mark.parametrize("tool", ["ls", "find", "grep"])
def test_folder_tools_refuse_folders_outside_the_workspace(
    call: Call, tmp_path: Path, tool: str, path: str
) -> None:
    (tmp_path / "etc_link").symlink_to("/etc")

    outcome = call(tool, **_arguments(tool, path))

    assert outcome.is_error, f"{tool} should refuse {path}, got {outcome.content!r}"
    assert "outside the workspace" in outcome.content


@pytest.mark.parametrize("tool", ["read", "write", "edit", "grep"])
def test_file_tools_refuse_a_file_with_several_hard_links(
    call: Call, tmp_path: Path, tool: str
) -> None:
    # Given a workspace file hard-linked to a file outside the workspace
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("root secret\n")
    (workspace / "linked.txt").hardlink_to(outside)

    # When a file tool is pointed at the link (tmp_path is the workspace, so go through it)
    outcome = call(tool, **_arguments(tool, "workspace/linked.txt"))

    # Then it refuses, and the outside file is unchanged
    assert outcome.is_error, f"{tool} should refuse a hard link, got {outcome.content!r}"
    assert "has 2 hard links" in outcome.content
    assert "secret" not in outcome.content.replace("secret.txt", "")
    assert outside.read_text() == "root secret\n"


@pytest.mark.parametrize("folder", ["sessions", ".harness"])
@pytest.mark.parametrize("tool", ["read", "write", "edit", "ls", "find", "grep"])
def test_file_tools_refuse_the_hidden_folders(
    call: Call, tmp_path: Path, tool: str, folder: str
) -> None:
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "chat.jsonl").write_text("root transcript\n")
    path = f"{folder}/chat.jsonl" if tool in ("read", "write", "edit") else folder

    outcome = call(tool, **_arguments(tool, path))

    assert outcome.is_error, f"{tool} should refuse {path}, got {outcome.content!r}"
    assert "which is private" in outcome.content
    assert (tmp_path / folder / "chat.jsonl").read_text() == "root transcript\n"


def test_file_tools_refuse_a_symlink_into_a_hidden_folder(call: Call, tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "chat.jsonl").write_text("root transcript\n")
    (tmp_path / "chat_link").symlink_to(tmp_path / "sessions" / "chat.jsonl")

    outcome = call("read", path="chat_link")

    assert outcome.is_error
    assert "which is private" in outcome.content


@pytest.mark.parametrize("tool", ["ls", "find", "grep"])
def test_walking_tools_leave_the_hidden_folders_out(call: Call, tmp_path: Path, tool: str) -> None:
    for folder in ("sessions", ".harness", "notes"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "chat.jsonl").write_text("root transcript\n")
    (tmp_path / "link_to_sessions").symlink_to(tmp_path / "sessions" / "chat.jsonl")

    outcome = call(tool, **_arguments(tool, "."))

    assert not outcome.is_error, outcome.content
    assert "notes" in outcome.content
    assert "sessions" not in outcome.content.replace("link_to_sessions", "")
    assert ".harness" not in outcome.content
    if tool != "ls":  # ls lists names; the others would have to follow the link
        assert "link_to_sessions" not in outcome.content
