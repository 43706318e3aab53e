"""The session store: one JSONL file per session, appended atomically, replaced with an archive."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from harness.agent.session import (
    SUMMARY_HEADER,
    CompactionLine,
    SessionLine,
    SessionStore,
)
from harness.llm.types import Message, ReasoningBlock, ToolCall, ToolResult


def _every_kind() -> list[Message]:
    call = ToolCall(id="call-1", name="read", arguments={"path": "notes/ä.md", "limit": 3})
    return [
        Message.user("hello\nwith a newline and ünïcode"),
        Message.assistant(
            "let me look",
            (call,),
            (ReasoningBlock(provider="anthropic", model="m", block={"type": "thinking"}),),
        ),
        Message.tool(ToolResult(tool_call_id="call-1", content="line 1\nline 2", is_error=True)),
        Message.assistant("done"),
    ]


def test_session_store_round_trips_every_message_kind(tmp_path: Path) -> None:
    # Given a store and lines of every message kind plus a checkpoint
    store = SessionStore(tmp_path)
    lines: list[SessionLine | CompactionLine] = [
        CompactionLine(summary="## Goal\nx", run_id="r0", meta={"idem": "c"})
    ]
    lines += [
        SessionLine(message=m, event_id="ev-1", run_id="run-1", meta={"n": i})
        for i, m in enumerate(_every_kind())
    ]
    # When they are appended and loaded back
    store.append("telegram-42", lines)
    loaded = store.load("telegram-42")
    # Then every field comes back equal
    assert loaded == lines, "loaded lines differ from the appended ones"
    assert isinstance(loaded[0], CompactionLine)


def test_session_store_load_of_a_missing_session_is_empty(tmp_path: Path) -> None:
    assert SessionStore(tmp_path).load("nobody") == []
    assert SessionStore(tmp_path).messages("nobody") == []


def test_session_store_writes_one_json_object_per_line_with_a_kind(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.append("k", [SessionLine(message=Message.user("hi"))])
    raw = store.path_for("k").read_text().splitlines()
    assert len(raw) == 1
    record = json.loads(raw[0])
    assert record["kind"] == "message"
    assert record["ts"].endswith("Z"), f"timestamp should be UTC ISO 8601, got {record['ts']}"


def test_session_store_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    # Given 8 threads, each appending batches of large lines to one session
    store = SessionStore(tmp_path)
    threads_n, batches, per_batch = 8, 10, 3
    big = "x" * 70_000  # larger than a pipe buffer, so torn writes would show

    def writer(t: int) -> None:
        for b in range(batches):
            batch = [
                SessionLine(message=Message.user(f"{t}:{b}:{i}:{big}"), meta={"t": t, "b": b})
                for i in range(per_batch)
            ]
            store.append("shared", batch)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(threads_n)]
    # When they all run at once
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then every line is intact and each batch is contiguous and in order
    lines = store.load("shared")
    assert len(lines) == threads_n * batches * per_batch, "some lines were lost or torn"
    for start in range(0, len(lines), per_batch):
        batch = lines[start : start + per_batch]
        tags = [line.message.text.split(":")[:3] for line in batch if isinstance(line, SessionLine)]
        t, b = tags[0][0], tags[0][1]
        assert tags == [[t, b, str(i)] for i in range(per_batch)], f"batch interleaved: {tags}"


def test_session_store_skips_a_corrupt_trailing_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a session whose last write was cut short by a crash
    store = SessionStore(tmp_path)
    store.append("k", [SessionLine(message=Message.user("one"))])
    with store.path_for("k").open("ab") as f:
        f.write(b'{"kind": "message", "message": {"role": "us')
    # When it is loaded
    with caplog.at_level(logging.WARNING, logger="harness.agent.session"):
        lines = store.load("k")
    # Then the good line is there and the broken one is reported, not raised
    assert [line.message.text for line in lines if isinstance(line, SessionLine)] == ["one"]
    assert "skipping unreadable line 2" in caplog.text


def test_session_store_append_after_a_torn_line_stays_readable(tmp_path: Path) -> None:
    # Given a torn last line with no newline
    store = SessionStore(tmp_path)
    store.append("k", [SessionLine(message=Message.user("one"))])
    with store.path_for("k").open("ab") as f:
        f.write(b'{"kind": "mess')
    # When another line is appended
    store.append("k", [SessionLine(message=Message.user("two"))])
    # Then the new line is not glued to the torn one
    texts = [line.message.text for line in store.load("k") if isinstance(line, SessionLine)]
    assert texts == ["one", "two"]


def test_session_store_append_once_writes_a_key_once(tmp_path: Path) -> None:
    # Given a message appended under an idempotency key
    store = SessionStore(tmp_path)
    line = SessionLine(message=Message.user("the current message"), event_id="ev-9")
    first = store.append_once("k", line, key="ev-9:user")
    # When the same step is replayed
    second = store.append_once("k", line, key="ev-9:user")
    # Then the message appears once, carrying its key
    lines = store.load("k")
    assert (first, second) == (True, False)
    assert len(lines) == 1, "a replayed append_once wrote the message twice"
    assert lines[0].meta["idem"] == "ev-9:user"


def test_session_store_append_once_honours_keys_a_checkpoint_covers(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.replace("k", [CompactionLine(summary="s", covered_idem=("ev-1:user",))])
    written = store.append_once("k", SessionLine(message=Message.user("hi")), key="ev-1:user")
    assert written is False
    assert len(store.load("k")) == 1


def test_session_store_path_for_keeps_traversal_inside_sessions(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    for key in ["../../etc", "..", "/etc/passwd", "a/../../b", ".hidden", "x\x00y"]:
        path = store.path_for(key)
        assert path.parent == tmp_path / "sessions", f"{key!r} escaped to {path}"
        assert not path.name.startswith("."), f"{key!r} became a hidden file {path.name}"
    store.append("../../etc", [SessionLine(message=Message.user("hi"))])
    assert store.load("../../etc")[0].meta == {}
    assert not (tmp_path.parent / "etc").exists()


def test_session_store_path_for_distinguishes_keys_differing_in_unsafe_chars(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path)
    a, b = store.path_for("slack/C1:T1"), store.path_for("slack:C1/T1")
    assert a != b, "two different keys share one session file"
    assert store.path_for("slack/C1:T1") == a, "path_for is not deterministic"
    assert a.name.startswith("slack_C1_T1-")


def test_session_store_path_for_refuses_an_empty_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty"):
        SessionStore(tmp_path).path_for("")


def test_session_store_replace_archives_the_old_file(tmp_path: Path) -> None:
    # Given a session with two lines
    store = SessionStore(tmp_path)
    old = [SessionLine(message=Message.user("a")), SessionLine(message=Message.assistant("b"))]
    store.append("k", old)
    before = store.path_for("k").read_bytes()
    # When it is replaced
    new = [SessionLine(message=Message.user("c"))]
    archived = store.replace("k", new)
    # Then the old bytes are in the archive and the file holds the new lines
    assert archived is not None
    assert archived.parent == tmp_path / "sessions" / "archive"
    assert archived.name.startswith(store.path_for("k").stem + "-")
    assert archived.read_bytes() == before, "the archive does not hold the old file"
    assert store.load("k") == new


def test_session_store_replace_twice_keeps_both_archives(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.append("k", [SessionLine(message=Message.user("a"))])
    first = store.replace("k", [SessionLine(message=Message.user("b"))])
    second = store.replace("k", [SessionLine(message=Message.user("c"))])
    assert first is not None and second is not None and first != second
    assert first.exists() and second.exists()


def test_session_store_replace_of_a_new_session_archives_nothing(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    assert store.replace("k", [SessionLine(message=Message.user("a"))]) is None
    assert len(store.load("k")) == 1


def test_session_store_messages_start_at_the_latest_checkpoint(tmp_path: Path) -> None:
    # Given lines, a checkpoint, and lines after it
    store = SessionStore(tmp_path)
    store.append(
        "k",
        [
            SessionLine(message=Message.user("forgotten")),
            CompactionLine(summary="## Goal\nfirst"),
            SessionLine(message=Message.user("also forgotten")),
            CompactionLine(summary="## Goal\nsecond"),
            SessionLine(message=Message.user("kept")),
        ],
    )
    # When the model's view is asked for
    messages = store.messages("k")
    # Then it is the latest summary as a user message, then what followed
    assert messages == [Message.user(SUMMARY_HEADER + "## Goal\nsecond"), Message.user("kept")]
