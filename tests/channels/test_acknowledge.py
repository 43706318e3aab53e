"""`acknowledge-message`: Telegram's typing indicator at once and every 4 s until the reply is
out (never longer than ten minutes); Slack's :eyes: once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from channels import registry as channel_registry
from channels.acknowledge import ACKNOWLEDGE, ACKNOWLEDGE_FOR_S
from channels.handlers import FUNCTIONS
from channels.slack.channel import SlackChannel
from channels.telegram.channel import TelegramChannel
from harness.agent.handlers import HANDLE_MESSAGE
from harness.events import MESSAGE_RECEIVED, REPLY_READY
from harness.runtime import Context, Runtime, event, function, publish, run_id_for, set_runtime
from harness.runtime.executor import advance
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.channels.channel_doubles import use_channels
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi
from tests.runtime_fixtures import ManualClock

GO = "test/go"


@pytest.fixture
def bus(runtime: Runtime, registry: FunctionRegistry) -> Iterator[Runtime]:
    """The channel functions, and a stand-in agent that replies when `test/go` is published."""
    for fn in FUNCTIONS:
        registry.register(fn)

    @function(id=HANDLE_MESSAGE, trigger=event(MESSAGE_RECEIVED), registry=registry)
    def agent(ctx: Context) -> None:
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


def ack_result(runtime: Runtime) -> dict[str, Any] | None:
    run = runtime.ledger.run(run_id_for(ACKNOWLEDGE, "m1"))
    assert run is not None, "the acknowledge run must exist"
    return run.result if run.status == "completed" else None


def test_acknowledge_telegram_typing_is_refreshed_until_the_reply(
    bus: Runtime, clock: ManualClock, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    use_channels(telegram=telegram)
    # Given a message the agent takes a while to answer
    publish(message("telegram", {"chat_id": "1111111", "thread_id": "42"}), runtime=bus)
    drain(bus)
    # Then "typing" is shown at once, in the topic
    assert typing_count(telegram_api) == 1
    assert telegram_api.calls_to("sendChatAction")[0].params["message_thread_id"] == 42
    # When 4 s pass twice, it is shown again each time
    for expected in (2, 3):
        clock.advance(4)
        drain(bus)
        assert typing_count(telegram_api) == expected
    # When the reply goes out, the refreshing stops
    publish({"name": GO}, runtime=bus)
    drain(bus)
    clock.advance(4)
    drain(bus)
    assert typing_count(telegram_api) == 3
    assert ack_result(bus) == {"acknowledged": True, "refreshes": 2, "redelivered": []}
    assert [m["text"] for m in telegram_api.messages] == ["done"]


def test_acknowledge_stops_when_the_reply_came_before_it_waited(
    bus: Runtime, clock: ManualClock, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    use_channels(telegram=telegram)
    # Given the agent answered before the acknowledge run first waited for the reply
    publish(message("telegram", {"chat_id": "1111111"}), runtime=bus)
    agent_run = run_id_for(HANDLE_MESSAGE, "m1")
    advance(bus, agent_run)
    publish({"name": GO}, runtime=bus)
    advance(bus, agent_run)
    assert bus.ledger.run(agent_run).status == "completed"  # type: ignore[union-attr]
    drain(bus)
    # When its wait times out
    clock.advance(4)
    drain(bus)
    # Then it sees that the turn is over and does not show typing again
    assert typing_count(telegram_api) == 1
    assert ack_result(bus) == {"acknowledged": True, "refreshes": 0, "redelivered": []}


def test_acknowledge_gives_up_after_ten_minutes(
    bus: Runtime, clock: ManualClock, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    use_channels(telegram=telegram)
    # Given an agent that never answers
    publish(message("telegram", {"chat_id": "1111111"}), runtime=bus)
    drain(bus)
    # When much more than ten minutes pass
    for _ in range(int(ACKNOWLEDGE_FOR_S // 4) + 20):
        clock.advance(4)
        drain(bus)
    # Then typing was refreshed for ten minutes and then no more
    refreshes = int(ACKNOWLEDGE_FOR_S // telegram.acknowledge_every)
    assert typing_count(telegram_api) == 1 + refreshes
    assert ack_result(bus) == {"acknowledged": True, "refreshes": refreshes, "redelivered": []}


def test_acknowledge_slack_reacts_with_eyes_once(
    bus: Runtime, clock: ManualClock, slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    use_channels(slack=slack)
    destination = {"chat_id": "C123ABC456", "message_id": "1515449522.000016"}
    publish(message("slack", destination), runtime=bus)
    drain(bus)
    clock.advance(60)
    drain(bus)
    assert slack_api.reactions == {("C123ABC456", "1515449522.000016", "eyes")}
    assert len(slack_api.calls_to("reactions.add")) == 1
    assert ack_result(bus) == {"acknowledged": True, "refreshes": 0, "redelivered": []}


def test_acknowledge_a_message_from_a_channel_without_a_platform_does_nothing(
    bus: Runtime, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    use_channels(telegram=telegram)
    publish(message("cli", {"chat_id": "cli-default"}), runtime=bus)
    drain(bus)
    assert ack_result(bus) == {"acknowledged": False, "redelivered": []}
    assert telegram_api.calls == []


def test_acknowledge_shows_a_stranger_nothing(
    bus: Runtime, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a message from someone nobody approved (DM_POLICY=pairing, the default)
    use_channels(telegram=telegram)
    stranger = message("telegram", {"chat_id": "42"})
    stranger["data"]["channel_meta"] = {
        "access": {"subjects": ["telegram:user:42"], "pairing_subject": "telegram:user:42"}
    }
    # When the channel functions run
    publish(stranger, runtime=bus)
    drain(bus)
    # Then no typing indicator went to the stranger
    assert ack_result(bus) == {"acknowledged": False, "redelivered": []}
    assert telegram_api.calls_to("sendChatAction") == []
