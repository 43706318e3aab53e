"""`bench.session_resume` runs a turn's two executions against the store as a turn does."""

from __future__ import annotations

from pathlib import Path

from bench.session_resume import seed, wave
from harness.agent.session import SessionLine, SessionStore


def test_bench_session_resume_writes_each_turns_message_once_and_its_answer(
    tmp_path: Path,
) -> None:
    # Given three chats of four earlier lines, with one warm-up turn each
    store = SessionStore(tmp_path)
    seed(store, chats=3, lines=4)
    # When a measured wave runs
    wave(store, 3, "measured")
    # Then each chat gained the person's message once (the resume's save is refused) and
    # the answer
    lines = store.load("chat-2")
    texts = [line.message.text for line in lines if isinstance(line, SessionLine)]
    assert texts[4:] == ["warm 2", "answer 2", "measured 2", "answer 2"], texts
