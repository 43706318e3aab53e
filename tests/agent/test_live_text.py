"""The answer as it streams: `writing` messages on the session's progress channel."""

from __future__ import annotations

import itertools

from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.live_text import LiveText
from harness.agent.progress import WRITING, Progress, subscribe
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply

ANSWER = "Tides follow the moon; the sun adds a little. " * 4


def _writing(messages: list[Progress]) -> list[Progress]:
    return [m for m in messages if m.state == WRITING]


def test_live_text_grows_in_order_and_ends_with_the_whole_answer(agent: AgentRig) -> None:
    # Given a model that streams its answer a few characters at a time
    agent.model.script(Reply.answer(ANSWER, chunk=4))
    with subscribe(agent.runtime, "chat-1") as progress:
        # When the user asks in that session
        run_id = agent.say("why tides?")
        writing = _writing(list(progress.messages(timeout=0)))
    # Then each message extends the one before, and the last is the answer the user gets
    assert writing, "expected writing messages while the answer streamed"
    texts = [m.text for m in writing]
    assert all(b.startswith(a) for a, b in itertools.pairwise(texts)), texts
    assert texts[-1].strip() == agent.replies()[-1], "the last text should be the reply"
    assert {(m.run_id, m.step, m.attempt) for m in writing} == {(run_id, 1, 0)}


def test_live_text_is_not_published_when_stream_replies_is_off(agent: AgentRig) -> None:
    # Given a deployment with STREAM_REPLIES=false
    settings = make_settings(agent.workspace, agent.model, stream_replies=False)
    set_agent_deps(build_deps(settings))
    agent.model.script(Reply.answer(ANSWER, chunk=4))
    with subscribe(agent.runtime, "chat-1") as progress:
        # When the user asks
        agent.say("why tides?")
        received = list(progress.messages(timeout=0))
    # Then progress still comes, but no text
    assert received, "expected the thinking status at least"
    assert _writing(received) == [], "no text should be published with streaming off"


def test_live_text_coalesces_pieces_that_arrive_within_the_interval() -> None:
    # Given live text that publishes at most once a minute
    published: list[Progress] = []
    live = LiveText("run-1", publish=published.append, interval=60.0)
    on_text = live.begin(step=1, attempt=0)
    # When many pieces stream in and the step ends
    for piece in ["a", "b", "c", "d"]:
        on_text(piece)
    live.end()
    # Then the first piece went out at once and the rest in one message at the end
    assert [m.text for m in published] == ["a", "abcd"]


def test_deferred_live_text_passes_pieces_on_only_when_flushed() -> None:
    # Given deferred live text (the model gateway's) drawing a draft
    shown: list[str] = []

    class Draft:
        def show(self, text: str) -> None:
            shown.append(text)

    published: list[Progress] = []
    live = LiveText("run-1", publish=published.append, sink=Draft(), interval=0.0, deferred=True)
    on_text = live.begin(step=1, attempt=0)
    # When many pieces stream in between two flushes, and a flush with nothing new
    for piece in ["a", "b", "c"]:
        on_text(piece)
    assert shown == [] and published == [], "a deferred piece was passed on before a flush"
    due = [live.flush(), live.flush()]
    on_text("d")
    live.end()
    # Then the flush showed the text so far once and handed back its message to publish,
    # the empty flush nothing, and the end passed on and published the rest
    assert shown == ["abc", "abcd"], shown
    assert [m.text if m else None for m in due] == ["abc", None]
    assert [m.text for m in published] == ["abcd"], "the end should publish the rest itself"
