"""A message's acknowledgement, as the turn's first step (`harness.agent.arrival`) shows it
through the channels (`channels.acknowledge`, `channels.keeper`): Telegram's typing at once and
every `acknowledge_every` (4.5 s) while the turn is live (never longer than ten minutes),
Slack's :eyes: once, nothing for a stranger, and no `acknowledge-message` run. The turn here is
a stand-in that arrives as the agent's does and answers when `test/go` is published; the keeper
is driven by the test's clock (`run_due`), so every count is exact."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from channels import registry as channel_registry
from channels.acknowledge import ACKNOWLEDGE, ACKNOWLEDGE_FOR_S, run_is_live
from channels.agent_seam import ChannelPlatforms
from channels.handlers import FUNCTIONS
from channels.keeper import AcknowledgementKeeper
from channels.slack.channel import SlackChannel
from channels.telegram.channel import TelegramChannel
from harness.agent import platforms
from harness.agent.arrival import arrive
from harness.agent.handlers import HANDLE_MESSAGE
from harness.events import APPROVAL_ANSWERED, MESSAGE_RECEIVED, REPLY_READY, MessageReceived
from harness.records.stores import redis_records
from harness.records.undelivered import UndeliveredReply
from harness.runtime import Context, Runtime, event, function, publish, run_id_for, set_runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.channels.channel_doubles import use_channels
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi
from tests.runtime_fixtures import ManualClock

GO = "test/go"


@pytest.fixture
def keeper(clock: ManualClock) -> Iterator[AcknowledgementKeeper]:
    """A keeper on the test's clock, installed as the platforms' one; the previous platforms
    are put back afterwards."""
    kept = AcknowledgementKeeper(clock=clock, threaded=False)
    before = platforms.installed()
    platforms.install(ChannelPlatforms(channel_registry.channel_or_none, kept))
    yield kept
    platforms.install(before)


@pytest.fixture
def bus(
    runtime: Runtime, registry: FunctionRegistry, keeper: AcknowledgementKeeper
) -> Iterator[Runtime]:
    """The channel functions, and a stand-in turn that arrives as the agent's does, parks a
    second as for its model call, then replies when `test/go` is published."""
    for fn in FUNCTIONS:
        registry.register(fn)

    @function(id=HANDLE_MESSAGE, trigger=event(MESSAGE_RECEIVED), registry=registry)
    def agent(ctx: Context) -> None:
        arrive(ctx, MessageReceived.from_event(ctx.event), "pairing")
        ctx.step.sleep("model", 1)
        ctx.step.wait_for_event("go", event=GO, timeout="1h")
        reply = {k: ctx.event.data[k] for k in ("channel", "destination", "channel_meta")}
        reply.update(response="done", run_id=ctx.run_id)
        ctx.step.send_event("reply", {"name": REPLY_READY, "data": reply})

    runtime.register_functions()
    set_runtime(runtime)
    yield runtime
    set_runtime(None)
    channel_registry.reset()


def message(channel: str, destination: dict[str, Any], event_id: str = "m1") -> dict[str, Any]:
    data = {
        "message": "hello",
        "session_key": f"{channel}-{destination['chat_id']}",
        "channel": channel,
        "sender": {"id": "u1", "name": "Alice"},
        "destination": destination,
    }
    return {"name": MESSAGE_RECEIVED, "id": event_id, "data": data}


def typing_count(fake: FakeTelegramApi) -> int:
    return len(fake.calls_to("sendChatAction"))


def run_all(bus: Runtime, keeper: AcknowledgementKeeper) -> None:
    """Run what is due on the bus, then what the keeper has due."""
    drain(bus)
    keeper.run_due()


def arrival(runtime: Runtime) -> dict[str, Any]:
    """The turn's recorded "arrival" step."""
    journal = runtime.ledger.journal(run_id_for(HANDLE_MESSAGE, "m1"))
    assert "arrival:0" in journal, f"the turn must record its arrival, got {sorted(journal)}"
    return dict(journal["arrival:0"]["v"])


def test_acknowledge_a_message_starts_no_acknowledge_run(
    bus: Runtime, keeper: AcknowledgementKeeper, telegram: TelegramChannel
) -> None:
    use_channels(telegram=telegram)
    # When a message arrives and everything due runs
    publish(message("telegram", {"chat_id": "1111111"}), runtime=bus)
    run_all(bus, keeper)
    # Then the turn runs, and no `acknowledge-message` run was made for it
    assert bus.ledger.run(run_id_for(HANDLE_MESSAGE, "m1")) is not None
    assert bus.ledger.run(run_id_for(ACKNOWLEDGE, "m1")) is None
    assert [r.function_id for r in bus.ledger.recent(20)] == [HANDLE_MESSAGE]


def test_acknowledge_telegram_typing_is_refreshed_while_the_turn_is_live(
    bus: Runtime,
    clock: ManualClock,
    keeper: AcknowledgementKeeper,
    telegram: TelegramChannel,
    telegram_api: FakeTelegramApi,
) -> None:
    use_channels(telegram=telegram)
    # Given a message the turn takes a while to answer
    publish(message("telegram", {"chat_id": "1111111", "thread_id": "42"}), runtime=bus)
    run_all(bus, keeper)
    # Then "typing" is shown at once, in the topic
    assert typing_count(telegram_api) == 1
    assert telegram_api.calls_to("sendChatAction")[0].params["message_thread_id"] == 42
    # When its refresh time passes twice, it is shown again each time, with no run woken
    every = telegram.acknowledge_every
    for expected in (2, 3):
        clock.advance(every)
        run_all(bus, keeper)
        assert typing_count(telegram_api) == expected
    assert [r.function_id for r in bus.ledger.recent(20)] == [HANDLE_MESSAGE]
    # When the turn replies and ends, the refreshing stops
    publish({"name": GO}, runtime=bus)
    drain(bus)
    clock.advance(every)
    run_all(bus, keeper)
    clock.advance(every)
    run_all(bus, keeper)
    assert typing_count(telegram_api) == 3
    assert keeper.kept() == set(), "the keeper must drop a turn that is over"
    assert arrival(bus) == {"redelivered": [], "acknowledged": True}
    assert [m["text"] for m in telegram_api.messages] == ["done"]


def test_acknowledge_a_turn_resumed_elsewhere_is_kept_by_the_keeper_that_started(
    bus: Runtime,
    clock: ManualClock,
    keeper: AcknowledgementKeeper,
    telegram: TelegramChannel,
    telegram_api: FakeTelegramApi,
) -> None:
    use_channels(telegram=telegram)
    # Given a turn that arrived, showed typing and parked for its model call
    publish(message("telegram", {"chat_id": "1111111"}), runtime=bus)
    run_all(bus, keeper)
    assert typing_count(telegram_api) == 1
    # When it resumes in another process, whose keeper is another
    elsewhere = AcknowledgementKeeper(clock=clock, threaded=False)
    platforms.install(ChannelPlatforms(channel_registry.channel_or_none, elsewhere))
    clock.advance(1)
    drain(bus)
    elsewhere.run_due()
    # Then that process shows nothing and keeps nothing: the first keeper refreshes alone
    assert elsewhere.kept() == set()
    assert typing_count(telegram_api) == 1
    clock.advance(telegram.acknowledge_every - 1)
    keeper.run_due()
    assert typing_count(telegram_api) == 2
    assert keeper.kept() == {run_id_for(HANDLE_MESSAGE, "m1")}


def test_keeper_repeats_a_key_kept_twice_once(clock: ManualClock) -> None:
    # Given a key kept twice (a turn asking again), every 4 s
    keeper = AcknowledgementKeeper(clock=clock, threaded=False)
    sent: list[str] = []
    for name in ("first", "again"):
        keeper.keep("run-1", lambda n=name: sent.append(n), every=4, live=lambda: True, for_s=60)
    # When it is due, then 4 s later
    keeper.run_due()
    clock.advance(4)
    keeper.run_due()
    # Then the second ask was shown once, and only the first is repeated
    assert sent == ["first", "again", "first"]


def test_keeper_counts_the_next_repeat_from_the_start_of_a_slow_call(
    clock: ManualClock,
) -> None:
    # Given a key repeated every 4 s whose platform call takes 1 s
    keeper = AcknowledgementKeeper(clock=clock, threaded=False)
    sent: list[float] = []

    def slow_send() -> None:
        sent.append(clock())
        clock.advance(1)

    keeper.keep("run-1", slow_send, every=4, live=lambda: True, for_s=60, lasts=5)
    keeper.run_due()
    # When 4 s have passed since the first call started
    clock.advance(3)
    keeper.run_due()
    # Then it is repeated then, not 4 s after the slow call answered
    assert len(sent) == 2, f"expected a repeat 4 s after the first call started, got {sent}"
    assert sent[1] - sent[0] == 4


def kept_every_4s_lasting_5s(clock: ManualClock) -> tuple[AcknowledgementKeeper, list[float]]:
    """A threadless keeper on `clock` repeating "run-1" every 4 s, each showing for 5 s, and
    the seconds (from now) at which it sent."""
    keeper = AcknowledgementKeeper(clock=clock, threaded=False)
    sent: list[float] = []
    start = clock()
    keeper.keep(
        "run-1", lambda: sent.append(clock() - start), every=4, live=lambda: True, for_s=60, lasts=5
    )
    return keeper, sent


def test_keeper_skips_a_repeat_later_than_the_acknowledgement_lasts(clock: ManualClock) -> None:
    # Given a key repeated every 4 s whose acknowledgement lasts 5 s, shown at 0
    keeper, sent = kept_every_4s_lasting_5s(clock)
    keeper.run_due()
    # When the keeper next looks at 10 s (the repeat due at 4 s is 6 s late)
    clock.advance(10)
    keeper.run_due()
    # Then nothing is sent late, and the next repeat comes at the next slot, 12 s
    assert sent == [0], f"a repeat later than it lasts must be skipped, got {sent}"
    clock.advance(2)
    keeper.run_due()
    assert sent == [0, 12]
    assert keeper.kept() == {"run-1"}


def test_keeper_sends_a_repeat_late_by_less_than_it_lasts(clock: ManualClock) -> None:
    # Given a key repeated every 4 s whose acknowledgement lasts 5 s, shown at 0
    keeper, sent = kept_every_4s_lasting_5s(clock)
    keeper.run_due()
    # When the keeper next looks at 8 s (the repeat due at 4 s is 4 s late)
    clock.advance(8)
    keeper.run_due()
    # Then it is sent then, and the next one 4 s after it
    assert sent == [0, 8]
    clock.advance(4)
    keeper.run_due()
    assert sent == [0, 8, 12]


def test_keeper_sends_the_first_acknowledgement_however_late(clock: ManualClock) -> None:
    # Given a key handed over to a keeper that looks only 10 s later
    keeper, sent = kept_every_4s_lasting_5s(clock)
    clock.advance(10)
    # When it looks
    keeper.run_due()
    # Then the message's arrival is still shown: only repeats are skipped
    assert sent == [10]


def test_keeper_survives_a_failing_platform_and_a_failing_ledger(clock: ManualClock) -> None:
    # Given an acknowledgement whose platform call and liveness check both raise
    keeper = AcknowledgementKeeper(clock=clock, threaded=False)

    def broken() -> bool:
        raise ConnectionError("down")

    keeper.keep("run-1", broken, every=4, live=broken, for_s=60)
    # When it is due and then due again
    done = keeper.run_due()
    clock.advance(4)
    done += keeper.run_due()
    # Then nothing was raised, and the turn whose liveness is unknown is no longer kept
    assert done == 2
    assert keeper.kept() == set()


def test_keeper_sends_on_its_own_thread() -> None:
    # Given a threaded keeper and a platform call that waits for a moment
    keeper = AcknowledgementKeeper()
    release = threading.Event()
    sent = threading.Event()

    def send() -> None:
        release.wait(5)
        sent.set()

    # When a turn hands it over, it goes on at once
    keeper.keep("run-1", send, every=None, live=lambda: True, for_s=60)
    assert not sent.is_set()
    # Then the call is made on the keeper's thread
    release.set()
    assert keeper.settle(), "the keeper must finish the call"
    assert sent.is_set()


def test_acknowledge_gives_up_after_ten_minutes(
    bus: Runtime,
    clock: ManualClock,
    keeper: AcknowledgementKeeper,
    telegram: TelegramChannel,
    telegram_api: FakeTelegramApi,
) -> None:
    use_channels(telegram=telegram)
    # Given a turn that never answers
    publish(message("telegram", {"chat_id": "1111111"}), runtime=bus)
    run_all(bus, keeper)
    # When much more than ten minutes pass
    every = telegram.acknowledge_every
    for _ in range(int(ACKNOWLEDGE_FOR_S // every) + 20):
        clock.advance(every)
        run_all(bus, keeper)
    # Then typing was refreshed for ten minutes and then no more
    refreshes = int(ACKNOWLEDGE_FOR_S // every)
    assert typing_count(telegram_api) == 1 + refreshes
    assert keeper.kept() == set()


def test_acknowledge_slack_reacts_with_eyes_once(
    bus: Runtime,
    clock: ManualClock,
    keeper: AcknowledgementKeeper,
    slack: SlackChannel,
    slack_api: FakeSlackApi,
) -> None:
    use_channels(slack=slack)
    destination = {"chat_id": "C123ABC456", "message_id": "1515449522.000016"}
    publish(message("slack", destination), runtime=bus)
    run_all(bus, keeper)
    clock.advance(60)
    run_all(bus, keeper)
    assert slack_api.reactions == {("C123ABC456", "1515449522.000016", "eyes")}
    assert len(slack_api.calls_to("reactions.add")) == 1
    assert arrival(bus) == {"redelivered": [], "acknowledged": True}


def test_acknowledge_a_message_from_a_channel_without_a_platform_does_nothing(
    bus: Runtime,
    keeper: AcknowledgementKeeper,
    telegram: TelegramChannel,
    telegram_api: FakeTelegramApi,
) -> None:
    use_channels(telegram=telegram)
    publish(message("cli", {"chat_id": "cli-default"}), runtime=bus)
    run_all(bus, keeper)
    assert arrival(bus) == {"redelivered": [], "acknowledged": False}
    assert telegram_api.calls == []


def test_acknowledge_shows_a_stranger_nothing(
    bus: Runtime,
    keeper: AcknowledgementKeeper,
    telegram: TelegramChannel,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a message from someone nobody approved (DM_POLICY=pairing, the default)
    use_channels(telegram=telegram)
    stranger = message("telegram", {"chat_id": "42"})
    stranger["data"]["channel_meta"] = {
        "access": {"subjects": ["telegram:user:42"], "pairing_subject": "telegram:user:42"}
    }
    # When the turn arrives
    publish(stranger, runtime=bus)
    run_all(bus, keeper)
    # Then no typing indicator went to the stranger
    assert arrival(bus) == {"redelivered": [], "acknowledged": False}
    assert telegram_api.calls_to("sendChatAction") == []
    assert keeper.kept() == set()


def test_acknowledge_an_undelivered_reply_is_sent_again_before_the_new_reply(
    bus: Runtime,
    clock: ManualClock,
    keeper: AcknowledgementKeeper,
    telegram: TelegramChannel,
    telegram_api: FakeTelegramApi,
) -> None:
    use_channels(telegram=telegram)
    # Given a reply of this chat that delivery gave up on
    old = message("telegram", {"chat_id": "1111111"}, "m0")["data"]
    answer = {**old, "response": "the old answer", "run_id": "run-0"}
    given_up = {"name": REPLY_READY, "id": "r0", "data": answer}
    redis_records(bus).undelivered.record(
        UndeliveredReply(
            reply_id="r0", run_id="run-0", channel="telegram", chat_id="1111111", event=given_up
        )
    )
    # When the person writes again and the turn answers
    publish(message("telegram", {"chat_id": "1111111"}), runtime=bus)
    run_all(bus, keeper)
    clock.advance(1)
    run_all(bus, keeper)
    publish({"name": GO}, runtime=bus)
    run_all(bus, keeper)
    # Then the old reply went out first, once, and is no longer undelivered
    assert [m["text"] for m in telegram_api.messages] == ["the old answer", "done"]
    assert arrival(bus)["redelivered"] == ["redeliver:r0:0"]
    assert redis_records(bus).undelivered.all() == []


def test_acknowledge_a_run_parked_before_the_upgrade_finishes(
    runtime: Runtime, registry: FunctionRegistry, clock: ManualClock
) -> None:
    # Given an `acknowledge-message` run of the old kind, parked waiting for its turn's reply
    @function(id=ACKNOWLEDGE, trigger=event(MESSAGE_RECEIVED), registry=registry)
    def old(ctx: Context) -> None:
        ctx.step.wait_for_event("reply", event=REPLY_READY, timeout=4)

    runtime.register_functions()
    publish(message("telegram", {"chat_id": "1111111"}), runtime=runtime)
    drain(runtime)
    parked = runtime.ledger.run(run_id_for(ACKNOWLEDGE, "m1"))
    assert parked is not None and parked.status == "waiting", parked
    # When the upgraded workers run it (the function registered, triggered by nothing)
    upgraded = FunctionRegistry()
    for fn in FUNCTIONS:
        upgraded.register(fn)
    runtime.registry = upgraded
    runtime.register_functions()
    clock.advance(4)
    drain(runtime)
    # Then it finishes when it wakes, and a new message starts no such run
    done = runtime.ledger.run(run_id_for(ACKNOWLEDGE, "m1"))
    assert done is not None and done.status == "completed", done
    publish(message("telegram", {"chat_id": "1111111"}, "m2"), runtime=runtime)
    drain(runtime)
    assert runtime.ledger.run(run_id_for(ACKNOWLEDGE, "m2")) is None


def test_acknowledge_a_turn_waiting_for_an_approval_is_not_at_work(
    runtime: Runtime, registry: FunctionRegistry
) -> None:
    # Given a run waiting for an event of its own and one waiting for a person's approval
    @function(id="waits", trigger=event("test/waits"), registry=registry)
    def waits(ctx: Context) -> None:
        ctx.step.wait_for_event("w", event=str(ctx.event.data["for"]), timeout="1h")

    runtime.register_functions()
    busy = publish({"name": "test/waits", "data": {"for": GO}}, runtime=runtime).run_ids[0]
    asking = publish(
        {"name": "test/waits", "data": {"for": APPROVAL_ANSWERED}}, runtime=runtime
    ).run_ids[0]
    drain(runtime)
    # Then the first is at work (typing goes on), the one waiting for the person is not,
    # and neither is a run nobody made
    assert run_is_live(runtime, busy)
    assert not run_is_live(runtime, asking)
    assert not run_is_live(runtime, "r-nobody")
