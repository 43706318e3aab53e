"""The parsed session views a process keeps: used again only while the file is what it was.

A parse is seen through the warning an unreadable line gives each time it is parsed: a
session holding one says, by its warnings, how often the file was read and parsed."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.agent.deps import agent_deps, build_deps, set_agent_deps
from harness.agent.gateway import ModelGateway
from harness.agent.session import CompactionLine, SessionLine, SessionStore
from harness.agent.session_views import VIEWS, Views
from harness.llm.types import Message
from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply

ROOT = Path(__file__).resolve().parents[2]
UNREADABLE = b'{"kind": "message", "message": {"role": "nobody"}}\n'


def _texts(store: SessionStore, key: str) -> list[str]:
    return [line.message.text for line in store.load(key) if isinstance(line, SessionLine)]


def _with_an_unreadable_line(store: SessionStore, key: str) -> Path:
    """A session of "one", an unreadable line, "two": each parse of it warns once."""
    store.append(key, [SessionLine(message=Message.user("one"))])
    path = store.path_for(key)
    with path.open("ab") as f:
        f.write(UNREADABLE)
    store.append(key, [SessionLine(message=Message.user("two"))])
    return path


def _read_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> SessionStore:
    """A store whose session "chat" (`_with_an_unreadable_line`) was read once, warnings
    captured from then on."""
    store = SessionStore(tmp_path)
    _with_an_unreadable_line(store, "chat")
    caplog.set_level(logging.WARNING, logger="harness.agent.session")
    store.load("chat")
    return store


def _parses(caplog: pytest.LogCaptureFixture) -> int:
    return sum("skipping unreadable line" in r.getMessage() for r in caplog.records)


def test_session_view_of_an_unchanged_session_is_not_parsed_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a session read once, then more sessions read than the 64 a store used to keep
    store = SessionStore(tmp_path)
    _with_an_unreadable_line(store, "chat")
    caplog.set_level(logging.WARNING, logger="harness.agent.session")
    assert _texts(store, "chat") == ["one", "two"]
    assert _parses(caplog) == 1
    for n in range(100):
        store.append(f"other-{n}", [SessionLine(message=Message.user("hi"))])
        store.load(f"other-{n}")
    # When the first is read again (as a turn's second execution does)
    texts = _texts(store, "chat")
    # Then it is not parsed again
    assert texts == ["one", "two"]
    assert _parses(caplog) == 1, "the unchanged session was parsed again"


def test_session_view_takes_its_own_append_without_parsing_the_file_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a session read once
    store = _read_once(tmp_path, caplog)
    # When this process appends to it, once plainly and once by key, and reads it
    store.append("chat", [SessionLine(message=Message.assistant("three"))])
    written = store.append_once("chat", SessionLine(message=Message.user("four")), key="k4")
    # Then the new lines are there and the old ones were parsed once in all
    assert written and _texts(store, "chat") == ["one", "two", "three", "four"]
    assert not store.append_once("chat", SessionLine(message=Message.user("4")), key="k4")
    assert _parses(caplog) == 1


def test_session_view_sees_an_append_by_another_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a session this process read
    store = _read_once(tmp_path, caplog)
    # When another process keeps a proactive message in it (as a sub-agent's answer is kept)
    script = (
        "import sys; from pathlib import Path\n"
        "from harness.agent.proactive import keep_proactive\n"
        "from harness.agent.session import SessionStore\n"
        "from harness.events import ReplyTarget\n"
        "target = ReplyTarget(channel='c', destination={'chat_id': 'd'}, session_key='chat')\n"
        "kept = keep_proactive(SessionStore(Path(sys.argv[1])), target, 'from elsewhere',\n"
        "                      source='subagent', key='p1', run_id='r1')\n"
        "assert kept\n"
    )
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, env=env)
    # Then this process sees it, and parsed only what was appended
    assert _texts(store, "chat") == ["one", "two", "from elsewhere"]
    assert _parses(caplog) == 1
    # And its key counts here: keeping it again writes nothing
    again = SessionLine(message=Message.assistant("from elsewhere"), proactive=True)
    assert not store.append_once("chat", again, key="proactive:p1")


def test_session_view_sees_a_compaction_written_by_another_writer(tmp_path: Path) -> None:
    # Given a session this process read
    store = SessionStore(tmp_path)
    _with_an_unreadable_line(store, "chat")
    store.load("chat")
    # When another writer replaces it atomically with a checkpoint (a compaction elsewhere)
    path = store.path_for("chat")
    new = [CompactionLine(summary="they said one and two"), SessionLine(message=Message.user("3"))]
    temp = path.with_name(".elsewhere.tmp")
    temp.write_bytes(b"".join(line.model_dump_json().encode() + b"\n" for line in new))
    os.replace(temp, path)
    # Then the next read is the new file
    assert store.load("chat") == new
    assert [m.text for m in store.messages("chat")][1:] == ["3"]


def test_session_view_sees_a_rewrite_in_place_of_the_same_size(tmp_path: Path) -> None:
    # Given a session read once
    store = SessionStore(tmp_path)
    store.append("chat", [SessionLine(message=Message.user("one")), SessionLine(
        message=Message.user("two"))])  # fmt: skip
    store.load("chat")
    # When its bytes are changed in place, keeping its inode and its size
    path = store.path_for("chat")
    data = path.read_bytes()
    with path.open("r+b") as f:
        f.write(data.replace(b'"one"', b'"uno"'))
    assert len(path.read_bytes()) == len(data)
    # Then the next read sees the change
    assert _texts(store, "chat") == ["uno", "two"]


def test_session_view_reads_a_truncated_and_rewritten_file_whole(tmp_path: Path) -> None:
    # Given a session read once
    store = SessionStore(tmp_path)
    store.append("chat", [SessionLine(message=Message.user("one"))])
    store.load("chat")
    # When the file is truncated and written again, longer, on the same inode
    path = store.path_for("chat")
    other = [SessionLine(message=Message.user("a different first line")),
             SessionLine(message=Message.user("and a second"))]  # fmt: skip
    with path.open("r+b") as f:
        f.truncate(0)
        f.write(b"".join(line.model_dump_json().encode() + b"\n" for line in other))
    # Then the whole new file is read, not its bytes past the old length
    assert _texts(store, "chat") == ["a different first line", "and a second"]
    # And a file cut shorter is read whole too
    with path.open("r+b") as f:
        f.truncate(len(other[0].model_dump_json()) + 1)
    assert _texts(store, "chat") == ["a different first line"]


def test_session_view_never_follows_a_link(tmp_path: Path) -> None:
    # Given a session file that is a link to a file elsewhere
    store = SessionStore(tmp_path)
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(SessionLine(message=Message.user("secret")).model_dump_json().encode())
    store.dir.mkdir(parents=True)
    store.path_for("chat").symlink_to(elsewhere)
    # When it is read or appended to, then it is refused, and the file elsewhere is untouched
    with pytest.raises(OSError):
        store.load("chat")
    with pytest.raises(OSError):
        store.append("chat", [SessionLine(message=Message.user("more"))])
    assert b"more" not in elsewhere.read_bytes()


def test_session_views_keep_at_most_their_bound(tmp_path: Path) -> None:
    # Given views bounded to two sessions and 1,000 bytes
    views = Views(max_views=2, max_bytes=1000)
    paths = [tmp_path / f"s{n}.jsonl" for n in range(4)]
    for path in paths[:3]:
        path.write_bytes(SessionLine(message=Message.user("hi")).model_dump_json().encode())
    paths[3].write_bytes(
        SessionLine(message=Message.user("x" * 2000)).model_dump_json().encode() + b"\n"
    )
    # When three small sessions and one over the byte bound are read
    for path in paths:
        assert len(views.snapshot(path).lines) == 1
    # Then two are kept: the large one is not, the least recently used is dropped
    assert len(views) == 2
    assert len(VIEWS) <= VIEWS.max_views


def test_a_turns_resume_parses_no_line_its_first_execution_did(
    agent: AgentRig, caplog: pytest.LogCaptureFixture
) -> None:
    # Given the gateway path and a chat whose session holds an unreadable line
    settings = make_settings(agent.workspace, agent.model, model_calls="gateway")
    set_agent_deps(build_deps(settings))
    agent.runtime.call_servers.clear()
    store = agent_deps().sessions
    _with_an_unreadable_line(store, "chat-1")
    caplog.set_level(logging.WARNING, logger="harness.agent.session")
    agent.model.script(Reply.answer("Hello again."))
    # When a message's turn parks on its model call (its first execution)
    run_id = agent.say("hi")
    record = agent.runtime.ledger.run(run_id)
    assert record is not None and record.status == "waiting", record
    # And a hundred other chats' turns read their sessions meanwhile
    for n in range(100):
        store.append(f"other-{n}", [SessionLine(message=Message.user("hi"))])
        store.messages(f"other-{n}")
    # And another writer appends to the session meanwhile
    elsewhere = SessionLine(message=Message.assistant("meanwhile"), proactive=True)
    with store.path_for("chat-1").open("ab") as f:
        f.write(elsewhere.model_dump_json().encode() + b"\n")
    # And the turn resumes with the model's answer (its second execution)
    assert ModelGateway(agent.runtime, settings).serve_due() == 1
    drain(agent.runtime)
    # Then it answered, and the session was parsed once before its new lines
    assert agent.replies() == ["Hello again."]
    assert _parses(caplog) == 1, "a turn's execution parsed the session again"
    assert _texts(store, "chat-1") == ["one", "two", "hi", "meanwhile", "Hello again."]
