"""The fleet's own writes are told to this process's listeners, and a listener cannot fail one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import file_writes
from harness.agent.session import SessionLine, SessionStore
from harness.llm.types import Message
from harness.workspace_files import create_exclusively, unlink, write_replace


@pytest.fixture
def heard() -> Iterator[list[Path]]:
    paths: list[Path] = []
    file_writes.listen(paths.append)
    yield paths
    file_writes.unlisten(paths.append)


def test_file_writes_tells_listeners_each_write_of_our_own(
    tmp_path: Path, heard: list[Path]
) -> None:
    # Given a listener
    # When our own code writes, creates, removes a workspace file and appends to a transcript
    write_replace(tmp_path, "knowledge/a.md", b"one")
    create_exclusively(tmp_path, "b.md", b"two")
    unlink(tmp_path, "knowledge/a.md")
    store = SessionStore(tmp_path / "state")
    store.append("chat", [SessionLine(message=Message.user("hello"))])
    # Then it heard each path, after the write
    assert heard == [
        tmp_path / "knowledge" / "a.md",
        tmp_path / "b.md",
        tmp_path / "knowledge" / "a.md",
        store.path_for("chat"),
    ], heard


def test_file_writes_a_failing_listener_does_not_fail_the_write(tmp_path: Path) -> None:
    # Given a listener that raises
    def broken(path: Path) -> None:
        raise RuntimeError(f"cannot handle {path}")

    file_writes.listen(broken)
    try:
        # When our own code writes
        write_replace(tmp_path, "a.md", b"one")
    finally:
        file_writes.unlisten(broken)
    # Then the write happened all the same
    assert (tmp_path / "a.md").read_bytes() == b"one"
