from __future__ import annotations

from pathlib import Path

from harness.tools import ToolContext, ToolOutcome, ToolRegistry

from .conftest import Call


def test_read_returns_the_file_text(call: Call, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\nfirst\n")

    outcome = call("read", path="notes.md")

    assert not outcome.is_error
    assert outcome.content == "# Notes\nfirst"


def test_read_returns_the_requested_window(call: Call, tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))

    outcome = call("read", path="n.txt", offset=3, limit=2)

    assert (
        outcome.content == "line 3\nline 4\n\n[showing lines 3-4 of 10; use offset=5 to continue]"
    )


def test_read_stops_at_2000_lines_with_a_continuation_hint(call: Call, tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"{i}\n" for i in range(1, 2501)))

    first = call("read", path="long.txt", limit=5000)
    rest = call("read", path="long.txt", offset=2001)

    body, hint = first.content.split("\n\n")
    assert body.splitlines() == [str(i) for i in range(1, 2001)]
    assert hint == "[showing lines 1-2000 of 2500; use offset=2001 to continue]"
    assert rest.content.splitlines() == [str(i) for i in range(2001, 2501)]


def test_read_stops_at_50_kb_with_a_continuation_hint(call: Call, tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text(("x" * 99 + "\n") * 1000)

    outcome = call("read", path="wide.txt")

    body, hint = outcome.content.split("\n\n")
    assert len(body.encode()) <= 50 * 1024
    assert hint == "[showing lines 1-512 of 1000; use offset=513 to continue]"


def test_read_cuts_a_single_line_longer_than_50_kb(call: Call, tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("y" * 100_000 + "\nnext\n")

    outcome = call("read", path="min.js")

    assert outcome.content.startswith("y" * 50 * 1024 + "\n\n[line 1 is longer than 50 KB")
    assert outcome.content.endswith("use offset=2 to continue]")


def test_read_missing_file_is_an_error(call: Call) -> None:
    outcome = call("read", path="nope.txt")

    assert outcome.is_error
    assert outcome.content == "file not found: nope.txt"


def test_read_directory_is_an_error(call: Call, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()

    outcome = call("read", path="src")

    assert outcome.is_error
    assert "src is a directory" in outcome.content


def test_read_binary_file_is_an_error(call: Call, tmp_path: Path) -> None:
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

    outcome = call("read", path="logo.png")

    assert outcome.is_error
    assert "binary file" in outcome.content


def test_read_offset_past_the_end_is_an_error(call: Call, tmp_path: Path) -> None:
    (tmp_path / "short.txt").write_text("one\ntwo\n")

    outcome = call("read", path="short.txt", offset=5)

    assert outcome.is_error
    assert "offset 5 is past the end of short.txt, which has 2 lines" in outcome.content


def test_read_empty_file_says_so(call: Call, tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")

    assert call("read", path="empty.txt").content == "(empty.txt is empty)"


def _two_chats(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A workspace and two chats' transcripts in a private folder beside it."""
    workspace, private = tmp_path / "workspace", tmp_path / "state" / "sessions"
    workspace.mkdir()
    private.mkdir(parents=True)
    (private / "chat-1.jsonl").write_text('{"text": "own words"}\n')
    (private / "chat-2.jsonl").write_text('{"text": "another chat"}\n')
    return workspace, private / "chat-1.jsonl", private / "chat-2.jsonl"


def test_read_opens_the_conversations_own_transcript(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    workspace, own, _ = _two_chats(tmp_path)
    ctx = ToolContext(workspace, transcript=own)

    outcome = registry.execute("read", {"path": str(own)}, ctx)

    assert outcome == ToolOutcome('{"text": "own words"}')


def test_read_refuses_another_chats_transcript_and_writes_to_its_own(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    workspace, own, other = _two_chats(tmp_path)
    ctx = ToolContext(workspace, transcript=own)

    read_other = registry.execute("read", {"path": str(other)}, ctx)
    write_own = registry.execute("write", {"path": str(own), "content": "forged"}, ctx)
    without_transcript = registry.execute("read", {"path": str(own)}, ToolContext(workspace))

    assert read_other.is_error and "outside the workspace" in read_other.content
    assert "another chat" not in read_other.content
    assert write_own.is_error and "outside the workspace" in write_own.content
    assert own.read_text() == '{"text": "own words"}\n'
    assert without_transcript.is_error and "own words" not in without_transcript.content
