"""Replies drawn as they are written on Telegram: one draft, edited within the limits, finished
with the exact final text by `send-reply`."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from channels import registry as channel_registry
from channels.delivery import _Attempt, _deliver
from channels.draft_writer import DraftWriter
from channels.drafts import DraftLog
from channels.handlers import FUNCTIONS
from channels.notices import RECONSIDER_TEXT
from channels.slack.channel import SlackChannel
from channels.slack.format import to_chunks as slack_chunks
from channels.telegram.channel import TelegramChannel
from channels.telegram.format import to_chunks
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import HANDLE_MESSAGE, handle_message
from harness.events import Destination, ReplyReady
from harness.runtime import Runtime, run_id_for, set_runtime
from harness.runtime.executor import advance
from harness.runtime.functions import Function, FunctionRegistry, Singleton, SingletonMode
from harness.runtime.kicker import RecordingKicker
from harness.runtime.testing import drain
from harness.settings import Settings
from harness.web import create_app
from harness.web.webhooks import router
from tests.agent.conftest import make_settings
from tests.channels import payloads
from tests.channels.approval_presses import TELEGRAM_HEADERS
from tests.channels.conftest import slack_settings, telegram_settings
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi
from tests.runtime_fixtures import ManualClock
from tests.waiting import wait_until

PARAGRAPH = "The **tide** turns twice a day, pulled by the moon and pushed by the sun. "
EDIT_EVERY = 0.2
PRIVATE = Destination(chat_id=str(payloads.PRIVATE_CHAT["id"]), message_id="1365")


@pytest.fixture
def drafting(telegram_api: FakeTelegramApi) -> Iterator[TelegramChannel]:
    """A Telegram channel that edits drafts every EDIT_EVERY s, against a fake that allows
    one edit per EDIT_EVERY s per chat and answers 429 to anything faster. Previews
    (`sendMessageDraft`) are off: these tests are about the message edited in place."""
    telegram_api.edit_every = EDIT_EVERY
    settings = telegram_settings(
        telegram_api, telegram_draft_every=EDIT_EVERY, telegram_draft_previews=False
    )
    channel = TelegramChannel(settings)
    yield channel
    channel.api.close()


@pytest.fixture
def previewing(telegram_api: FakeTelegramApi) -> Iterator[TelegramChannel]:
    """A Telegram channel that streams drafts as `sendMessageDraft` previews in private chats
    (the default), every EDIT_EVERY s."""
    telegram_api.edit_every = EDIT_EVERY
    channel = TelegramChannel(telegram_settings(telegram_api, telegram_draft_every=EDIT_EVERY))
    yield channel
    channel.api.close()


@pytest.fixture
def fleet(
    runtime: Runtime,
    registry: FunctionRegistry,
    model_server: ModelServer,
    drafting: TelegramChannel,
    tmp_path: Path,
) -> Iterator[TestClient]:
    """The webhook route, the agent and the channel functions on one fakeredis runtime."""
    yield from _fleet(runtime, registry, model_server, drafting, tmp_path)


@pytest.fixture
def preview_fleet(
    runtime: Runtime,
    registry: FunctionRegistry,
    model_server: ModelServer,
    previewing: TelegramChannel,
    tmp_path: Path,
) -> Iterator[TestClient]:
    """Like `fleet`, with previews on."""
    yield from _fleet(runtime, registry, model_server, previewing, tmp_path)


@pytest.fixture(params=["edits", "previews"])
def cancel_fleet(
    request: pytest.FixtureRequest,
    runtime: Runtime,
    registry: FunctionRegistry,
    model_server: ModelServer,
    drafting: TelegramChannel,
    previewing: TelegramChannel,
    tmp_path: Path,
) -> Iterator[TestClient]:
    """Like `fleet` (drafts edited, or previews), with ON_NEW_MESSAGE=cancel, and leases
    renewed often so that a cancel request reaches the running turn within a fraction of a
    second, as it would on a worker."""
    runtime.lease_ttl = 0.6
    channel = drafting if request.param == "edits" else previewing
    agent = _agent_in_mode("cancel")
    yield from _fleet(runtime, registry, model_server, channel, tmp_path, agent=agent)


@pytest.fixture(params=["edits", "previews"])
def steer_fleet(
    request: pytest.FixtureRequest,
    runtime: Runtime,
    registry: FunctionRegistry,
    model_server: ModelServer,
    drafting: TelegramChannel,
    previewing: TelegramChannel,
    tmp_path: Path,
) -> Iterator[TestClient]:
    """Like `fleet` (drafts edited, or previews), with ON_NEW_MESSAGE=steer whatever the
    environment says."""
    channel = drafting if request.param == "edits" else previewing
    agent = _agent_in_mode("steer")
    yield from _fleet(runtime, registry, model_server, channel, tmp_path, agent=agent)


def _agent_in_mode(mode: SingletonMode) -> Function:
    """The agent's function with ON_NEW_MESSAGE=`mode`, whatever the environment says."""
    spec = handle_message.spec.model_copy(
        update={"singleton": Singleton(key="event.data.session_key", mode=mode)}
    )
    return Function(spec=spec, handler=handle_message.handler)


def _fleet(
    runtime: Runtime,
    registry: FunctionRegistry,
    model_server: ModelServer,
    drafting: TelegramChannel,
    tmp_path: Path,
    agent: Function = handle_message,
) -> Iterator[TestClient]:
    for fn in (agent, *FUNCTIONS):
        registry.register(fn)
    runtime.register_functions()
    set_runtime(runtime)
    settings = make_settings(tmp_path / "workspace", model_server, dm_policy="open")
    set_agent_deps(build_deps(settings))
    channel_registry.reset()
    channel_registry.register("telegram", lambda: drafting)
    web = Settings(_env_file=None, agent_workspace=tmp_path)  # type: ignore[call-arg]
    with TestClient(create_app(lambda: runtime, web, routers=[router])) as client:
        yield client
    channel_registry.reset()
    set_agent_deps(None)
    set_runtime(None)


def send_reply_with_draft(
    runtime: Runtime, channel: SlackChannel, destination: Destination, run_id: str, text: str
) -> list[str]:
    """Deliver `text` as the reply of run `run_id` the way `send-reply` does."""
    channel_registry.reset()
    channel_registry.register("slack", lambda: channel)
    data = ReplyReady(
        response=text, channel="slack", destination=destination, channel_meta={}, run_id=run_id
    )
    try:
        attempt = _Attempt(runtime, run_id, f"reply-{run_id}", runtime.now_ms() + 600_000)
        return _deliver(attempt, data, {})
    finally:
        channel_registry.reset()


def _say(fleet: TestClient, text: str = "Why tides?", update_id: int = 10000) -> str:
    """Deliver a private Telegram message; return the agent's run id."""
    payload = payloads.tg_private_text(update_id=update_id, text=text)
    response = fleet.post("/webhooks/telegram", json=payload, headers=TELEGRAM_HEADERS)
    assert response.status_code == 200, response.text
    return run_id_for(HANDLE_MESSAGE, response.json()["event_id"])


def test_a_slowly_streamed_answer_is_one_draft_edited_within_the_limit_then_finished_exactly(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a model that writes a long answer slowly, a few characters at a time
    answer = PARAGRAPH * 8
    model_server.script(Reply.answer(answer, chunk=8, pace=0.01))
    pieces = -(-len(answer) // 8)
    # When a message arrives and the fleet runs the turn and the delivery
    _say(fleet)
    drain(runtime)
    # Then one message was posted, the draft, and the reply is that message, exactly
    (message,) = telegram_api.messages
    assert message["raw_text"] == to_chunks(answer.strip())[0].html
    assert message["reply_to_message"] == {"message_id": 1365}
    # And it grew by edits, far fewer than the pieces streamed, all within the platform's
    # limit: the final edit waited out the rest of the pace instead of drawing a 429
    edits = telegram_api.calls_to("editMessageText")
    assert 1 <= len(edits) < pieces // 3, f"{len(edits)} edits for {pieces} pieces"
    assert telegram_api.rate_limited == 0, f"{telegram_api.rate_limited} edits came too fast"


def test_delivery_records_hold_only_the_messages_a_streamed_turn_posted(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a streamed answer whose draft was edited, so the platform's pace held it between
    # edits
    model_server.script(Reply.answer(PARAGRAPH * 4, chunk=8, pace=0.01))
    # When the turn runs and its reply is delivered
    _say(fleet)
    drain(runtime)
    # Then every chunk a delivery record names is a message on the platform: the draft's
    # hold is kept apart, not as a chunk of a reply
    assert telegram_api.calls_to("editMessageText"), "the draft was never edited"
    on_platform = {str(m["message_id"]) for m in telegram_api.messages}
    pattern = runtime.keys.reply_chunks("*")
    for key in runtime.redis.scan_iter(match=pattern):
        chunks = {str(v) for v in runtime.redis.hvals(key)}
        assert chunks <= on_platform, f"{key!r} names {chunks - on_platform}, not messages"


def test_a_reply_longer_than_one_message_finishes_the_draft_and_posts_the_rest(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given an answer that needs two Telegram messages
    answer = PARAGRAPH * 80
    model_server.script(Reply.answer(answer, chunk=200, pace=0.005))
    # When the turn runs
    _say(fleet)
    drain(runtime)
    # Then the draft became the first chunk and the second came as a new message
    chunks = to_chunks(answer.strip())
    assert len(chunks) == 2
    assert [m["raw_text"] for m in telegram_api.messages] == [c.html for c in chunks]


def test_a_retried_run_finishes_the_draft_an_earlier_attempt_posted(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    drafting: TelegramChannel,
) -> None:
    # Given a run whose earlier execution posted a draft and crashed mid-stream
    model_server.script(Reply.answer(PARAGRAPH, chunk=8))
    run_id = _say(fleet)
    half = drafting.post_draft("The **tide** turns", PRIVATE, {})
    DraftLog(runtime, run_id).record(half)
    # When the run executes again to the end
    drain(runtime)
    # Then no second message was posted: the half draft now holds the whole answer
    (message,) = telegram_api.messages
    assert str(message["message_id"]) == half
    assert message["raw_text"] == to_chunks(PARAGRAPH.strip())[0].html


def test_a_think_step_cut_mid_stream_and_retried_keeps_one_draft(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    clock: ManualClock,
) -> None:
    # Given a model whose first stream breaks after a few words, and whose second completes
    answer = "The tide turns twice a day, pulled by the moon. " * 3
    model_server.script(
        Reply.answer(answer, chunk=8, pace=0.1, cut_after=8), Reply.answer(answer, chunk=8)
    )
    # When the turn runs until the broken stream parks it for a retry
    _say(fleet)
    drain(runtime)
    # Then the half answer is on the platform as a draft
    (draft,) = telegram_api.messages
    assert answer.startswith(draft["text"]) and draft["text"] != answer.strip(), draft
    # And when the retry runs, the same message becomes the whole answer: no second draft
    clock.advance(600)
    drain(runtime)
    (message,) = telegram_api.messages
    assert message["message_id"] == draft["message_id"]
    assert message["raw_text"] == to_chunks(answer.strip())[0].html
    assert len(model_server.requests) == 2, "the think step should have run twice"


def test_streaming_off_for_the_channel_posts_the_reply_once_without_edits(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    drafting: TelegramChannel,
) -> None:
    # Given TELEGRAM_STREAM_REPLIES=false
    drafting.settings = drafting.settings.model_copy(update={"telegram_stream_replies": False})
    model_server.script(Reply.answer(PARAGRAPH * 4, chunk=8, pace=0.01))
    # When the turn runs
    _say(fleet)
    drain(runtime)
    # Then the reply is one message and nothing was edited
    assert len(telegram_api.messages) == 1
    assert telegram_api.calls_to("editMessageText") == []


def test_slack_streams_a_reply_as_one_message_updated_then_finished_exactly(
    runtime: Runtime, slack_api: FakeSlackApi
) -> None:
    # Given a Slack channel that updates drafts every EDIT_EVERY s, against a workspace limit
    slack_api.update_every = EDIT_EVERY
    slack = SlackChannel(slack_settings(slack_api, slack_draft_every=EDIT_EVERY))
    thread = Destination(chat_id="C123ABC456", thread_id="1355517523.000005")
    writer = DraftWriter(slack, thread, {}, DraftLog(runtime, "run-slack"))
    # When text grows, the turn ends, and the reply is delivered
    writer.show("The *tide* turns")
    wait_until(lambda: slack_api.messages, "the draft to be posted")
    writer.show("The **tide** turns twice a day")
    wait_until(lambda: slack_api.calls_to("chat.update"), "the draft to be updated")
    writer.close()
    posted = send_reply_with_draft(runtime, slack, thread, "run-slack", PARAGRAPH)
    # Then the thread holds one message, the draft, finished as the reply's mrkdwn
    (message,) = slack_api.messages
    assert posted == [message["ts"]]
    assert message["text"] == slack_chunks(PARAGRAPH)[0]
    assert message["thread_ts"] == "1355517523.000005"


def test_an_interrupted_draft_is_marked_as_such(
    runtime: Runtime, drafting: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a draft on the platform
    writer = DraftWriter(drafting, PRIVATE, {}, DraftLog(runtime, "run-cut"))
    writer.show("Half an ans")
    wait_until(lambda: telegram_api.messages, "the draft to be posted")
    # When the turn is cancelled
    writer.close(interrupted=True)
    # Then the draft says it was cut short instead of passing for a whole answer
    (message,) = telegram_api.messages
    assert message["text"] == "Half an ans\n\n(interrupted)", message


def _draft_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "draft-writer"]


def test_a_draft_nothing_is_shown_in_starts_no_thread_and_posts_nothing(
    runtime: Runtime, drafting: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a turn's draft whose text is drawn elsewhere (its model call went to the gateway)
    before = _draft_threads()
    writer = DraftWriter(drafting, PRIVATE, {}, DraftLog(runtime, "run-elsewhere"))
    # When the turn's execution ends without showing anything, interrupted or not
    started = [t for t in _draft_threads() if t not in before]
    writer.close(interrupted=True)
    # Then no drafting thread ran and nothing reached the platform
    assert started == [], f"a draft with no text started {started}"
    assert telegram_api.messages == [] and telegram_api.calls_to("sendMessageDraft") == []


def test_a_429_holds_the_next_edit_back(
    runtime: Runtime, drafting: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a draft, and a platform that now wants edits an hour apart
    writer = DraftWriter(drafting, PRIVATE, {}, DraftLog(runtime, "run-slow"))
    writer.show("One")
    wait_until(lambda: telegram_api.messages, "the draft to be posted")
    telegram_api.edit_every = 3600.0
    # When the text keeps growing
    for text in ("One two", "One two three", "One two three four"):
        writer.show(text)
    wait_until(lambda: telegram_api.rate_limited, "a 429 for an edit")
    writer.close()
    # Then after the 429 the writer waited instead of trying again: the refused edit is the
    # only one, and the draft keeps its first text
    assert len(telegram_api.calls_to("editMessageText")) == 1
    assert telegram_api.messages[0]["text"] == "One"


def test_a_private_chat_sees_previews_then_one_message_with_the_exact_reply(
    preview_fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a model that writes an answer slowly, and a Bot API that offers sendMessageDraft
    answer = PARAGRAPH * 6
    model_server.script(Reply.answer(answer, chunk=8, pace=0.01))
    # When a private message arrives and the turn and the delivery run
    _say(preview_fleet)
    drain(runtime)
    # Then the answer grew as previews of one draft, each a prefix of the answer
    previews = telegram_api.calls_to("sendMessageDraft")
    assert len(previews) >= 2, previews
    assert {call.params["draft_id"] for call in previews} != {0}
    assert len({call.params["draft_id"] for call in previews}) == 1
    # And the reply is one message sent once with the exact final text, never edited, and no
    # preview is left showing
    (message,) = telegram_api.messages
    assert message["raw_text"] == to_chunks(answer.strip())[0].html
    assert message["reply_to_message"] == {"message_id": 1365}
    assert telegram_api.calls_to("editMessageText") == []
    assert telegram_api.drafts == {}


def test_an_answer_whole_within_the_first_interval_is_delivered_without_a_draft(
    preview_fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a model that streams a short answer at once
    model_server.script(Reply.answer(PARAGRAPH, chunk=8))
    # When a private message arrives and the turn and the delivery run
    _say(preview_fleet)
    drain(runtime)
    # Then the reply is one message, and no draft was drawn for an answer complete before the
    # draft's first interval was up: no preview, no draft message
    (message,) = telegram_api.messages
    assert message["raw_text"] == to_chunks(PARAGRAPH.strip())[0].html
    assert telegram_api.calls_to("sendMessageDraft") == []
    assert telegram_api.calls_to("editMessageText") == []


def test_a_bot_api_without_previews_falls_back_to_edits_and_remembers(
    runtime: Runtime, previewing: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a Bot API server that does not know sendMessageDraft
    telegram_api.drafts_supported = False
    # When two turns draw drafts in a private chat
    for run in ("run-a", "run-b"):
        writer = DraftWriter(previewing, PRIVATE, {"chat_type": "private"}, DraftLog(runtime, run))
        writer.show(f"Draft of {run}")
        wait_until(
            lambda run=run: any(m["text"] == f"Draft of {run}" for m in telegram_api.messages),
            "the draft to be posted as a message",
        )
        writer.close()
    # Then each draft became a message, and the refused method was tried only once
    assert [m["text"] for m in telegram_api.messages] == ["Draft of run-a", "Draft of run-b"]
    assert len(telegram_api.calls_to("sendMessageDraft")) == 1


def test_a_group_chat_is_drafted_by_edits_even_with_previews_on(
    runtime: Runtime, previewing: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a group chat (previews are for private chats only)
    group = Destination(chat_id="-1001234", message_id="7")
    writer = DraftWriter(previewing, group, {"chat_type": "supergroup"}, DraftLog(runtime, "g"))
    # When a draft is drawn
    writer.show("Group draft")
    wait_until(lambda: telegram_api.messages, "the draft to be posted")
    writer.close()
    # Then it is a message, and no preview was attempted
    assert telegram_api.messages[0]["text"] == "Group draft"
    assert telegram_api.calls_to("sendMessageDraft") == []


def test_an_interrupted_preview_says_so(
    runtime: Runtime, previewing: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a preview showing half an answer
    writer = DraftWriter(previewing, PRIVATE, {"chat_type": "private"}, DraftLog(runtime, "p"))
    writer.show("Half an ans")
    wait_until(lambda: telegram_api.drafts, "the preview to be shown")
    # When the turn is cancelled
    writer.close(interrupted=True)
    # Then the preview (which fades by itself) says it was cut short, and no message was sent
    assert list(telegram_api.drafts.values()) == ["Half an ans\n\n(interrupted)"]
    assert telegram_api.messages == []


def test_a_running_tool_shows_what_it_does_in_the_draft_then_the_answer_replaces_it(
    preview_fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a model that first reads a file, then answers after a while: the status line is
    # up for longer than the draft's first interval
    model_server.script(
        Reply.tool("read", {"path": "notes/plan.md"}),
        Reply.answer(PARAGRAPH, chunk=8, delay=3 * EDIT_EVERY),
    )
    # When a private message arrives and the turn runs
    _say(preview_fleet)
    drain(runtime)
    # Then the first preview was the status line, the path in code
    first = telegram_api.calls_to("sendMessageDraft")[0]
    assert first.params["text"] == "<i>reading</i> <code>notes/plan.md</code>", first
    # And the reply is the answer alone
    (message,) = telegram_api.messages
    assert message["raw_text"] == to_chunks(PARAGRAPH.strip())[0].html


def test_a_new_message_cancels_a_turn_mid_stream_and_leaves_no_half_answer(
    cancel_fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given ON_NEW_MESSAGE=cancel and a model that writes its first answer slowly
    model_server.script(
        Reply.answer(PARAGRAPH * 30, chunk=8, pace=0.02), Reply.answer("Tea it is, then.")
    )
    first = _say(cancel_fleet, "Why tides?")
    kicker = runtime.kicker
    assert isinstance(kicker, RecordingKicker)

    def second_worker() -> None:
        # When the person writes again while the first answer is being drawn, and a second
        # worker takes the new message (which asks the running turn to stop)
        wait_until(
            lambda: telegram_api.messages or telegram_api.drafts, "the first draft", timeout=30
        )
        _say(cancel_fleet, "Never mind: tea?", update_id=10001)
        while kicker.pending:
            kick = kicker.pending.popleft()
            advance(runtime, kick.run_id, kick.seq)

    helper = threading.Thread(target=second_worker)
    helper.start()
    drain(runtime)  # the first worker: the first turn, then whatever it frees
    helper.join(30)
    drain(runtime)
    # Then the first turn was cancelled before its answer was done
    assert runtime.ledger.run(first).status == "cancelled"  # type: ignore[union-attr]
    assert len(model_server.requests) == 2
    # And the chat holds the notice that the new message is being considered, then the second
    # answer: the first turn's draft became the notice (edits) or was never a message
    # (previews), so no half answer is left passing for a whole one
    texts = [m["text"] for m in telegram_api.messages]
    assert texts == [RECONSIDER_TEXT, "Tea it is, then."], texts
    if telegram_api.calls_to("editMessageText"):
        drafted = telegram_api.calls_to("sendMessage")[0].params["text"]
        shown = re.sub(r"<[^>]+>", "", drafted)  # the draft's text, as the person read it
        assert PARAGRAPH.replace("**", "").startswith(shown[:20]), drafted
    else:
        assert telegram_api.calls_to("sendMessageDraft"), "the first answer was never shown"
    # And no preview is left showing
    assert telegram_api.drafts == {}


def test_a_new_message_steered_into_a_turn_mid_stream_is_answered_after_the_whole_answer(
    steer_fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given ON_NEW_MESSAGE=steer and a model that writes its first answer slowly
    answer = PARAGRAPH * 30
    model_server.script(Reply.answer(answer, chunk=8, pace=0.02), Reply.answer("Tea it is, then."))
    first = _say(steer_fleet, "Why tides?")
    handed: list[str] = []

    def person() -> None:
        # When the person writes again while the first answer is being drawn
        wait_until(
            lambda: telegram_api.messages or telegram_api.drafts, "the first draft", timeout=30
        )
        second = _say(steer_fleet, "Never mind: tea?", update_id=10001)
        handed.append(runtime.ledger.run(second).status)  # type: ignore[union-attr]

    helper = threading.Thread(target=person)
    helper.start()
    drain(runtime)  # the worker: the first turn, then whatever it frees
    helper.join(30)
    drain(runtime)
    # Then the new message was handed to the running turn, which was not stopped: a turn is
    # steered before its next model call, and this one had none left
    assert handed == ["steered"], "the second message should arrive while the first streams"
    assert runtime.ledger.run(first).status == "completed"  # type: ignore[union-attr]
    # And the model answered the new message knowing the whole first answer was given
    assert len(model_server.requests) == 2, [r.body for r in model_server.requests]
    last = model_server.requests[1].body["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user"], last
    assert answer.strip() in json.dumps(last[1]) and "Never mind: tea?" in json.dumps(last[2])
    # And the chat ends with the new answer after the whole first one: no half answer is
    # left, nothing is marked interrupted, and no preview is left showing
    raws = [m["raw_text"] for m in telegram_api.messages]
    assert raws == [c.html for c in to_chunks(answer.strip())] + ["Tea it is, then."], raws
    drawn = [
        c.params["text"]
        for c in telegram_api.calls_to("editMessageText")
        + telegram_api.calls_to("sendMessageDraft")
    ]
    assert not any("(interrupted)" in text for text in drawn), drawn
    assert telegram_api.drafts == {}


def test_an_unchanged_preview_is_shown_again_before_it_fades(
    runtime: Runtime,
    previewing: TelegramChannel,
    telegram_api: FakeTelegramApi,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given previews refreshed after 0.3 s unchanged (instead of 20 s; one fades after ~30 s)
    monkeypatch.setattr("channels.draft_writer.PREVIEW_REFRESH_S", 0.3)
    writer = DraftWriter(previewing, PRIVATE, {"chat_type": "private"}, DraftLog(runtime, "l"))
    # When a status line stays while a long tool runs
    writer.show("_running bash:_ `make`")
    wait_until(
        lambda: len(telegram_api.calls_to("sendMessageDraft")) >= 3, "the preview to be renewed"
    )
    writer.close()
    # Then the same preview was shown again, not a new one
    calls = telegram_api.calls_to("sendMessageDraft")
    assert {c.params["text"] for c in calls} == {calls[0].params["text"]}
    assert {c.params["draft_id"] for c in calls} == {calls[0].params["draft_id"]}


def test_closing_an_interrupted_draft_twice_marks_it_once(
    runtime: Runtime, previewing: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a preview of half an answer
    writer = DraftWriter(previewing, PRIVATE, {"chat_type": "private"}, DraftLog(runtime, "x"))
    writer.show("Half")
    wait_until(lambda: telegram_api.drafts, "the preview to be shown")
    # When the turn's draft is closed as interrupted twice (a cancel, then the turn's exit)
    writer.close(interrupted=True)
    writer.close(interrupted=True)
    # Then it says once that it was cut short
    assert list(telegram_api.drafts.values()) == ["Half\n\n(interrupted)"]


def test_a_chat_that_blocked_the_bot_does_not_turn_previews_off_for_the_others(
    runtime: Runtime, previewing: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given one person who blocked the bot
    telegram_api.fail_next(status=403, method="sendMessageDraft")
    blocked = DraftWriter(previewing, PRIVATE, {"chat_type": "private"}, DraftLog(runtime, "b"))
    blocked.show("Never seen")
    wait_until(lambda: telegram_api.calls_to("sendMessageDraft"), "the refused preview")
    blocked.close()
    # When another private chat's answer is drawn
    other = Destination(chat_id="424242", message_id="9")
    writer = DraftWriter(previewing, other, {"chat_type": "private"}, DraftLog(runtime, "o"))
    writer.show("Seen")
    wait_until(lambda: telegram_api.drafts, "the other chat's preview")
    writer.close()
    # Then it is still a preview, and nothing was posted as a message in either chat
    assert list(telegram_api.drafts.values()) == ["Seen"]
    assert telegram_api.messages == []
