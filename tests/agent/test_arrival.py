"""The agent's turn acknowledges its message itself (`harness.agent.arrival`): typing on
Telegram before the model is asked, stopped once the turn is over, and the chat's undelivered
replies out before the answer; a chat command gets the redelivery without typing. Real turns
(a scripted model) on both paths (HARNESS_TEST_MODEL_CALLS=gateway runs them offloaded)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from channels import registry as channel_registry
from channels.agent_seam import ChannelPlatforms
from channels.handlers import FUNCTIONS
from channels.keeper import AcknowledgementKeeper
from channels.telegram.channel import TelegramChannel
from channels.telegram.settings import TelegramSettings
from harness.agent import platforms
from harness.agent.chat_commands.handler import chat_command
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.gateway import ModelGateway
from harness.events import MESSAGE_HANDLER, MESSAGE_RECEIVED, REPLY_READY
from harness.records.stores import redis_records
from harness.records.undelivered import UndeliveredReply
from harness.runtime import Runtime, publish, run_id_for
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.agent.conftest import AgentRig, make_settings
from tests.fakes.model_server import Reply
from tests.fakes.telegram_api import FakeTelegramApi
from tests.runtime_fixtures import ManualClock

CHAT = "1111111"


@pytest.fixture
def telegram_api() -> Iterator[FakeTelegramApi]:
    with FakeTelegramApi() as fake:
        yield fake


@pytest.fixture
def telegram(
    agent: AgentRig, registry: FunctionRegistry, telegram_api: FakeTelegramApi
) -> Iterator[TelegramChannel]:
    """Telegram (the fake Bot API) as the only platform, with the chat commands and the
    channel functions (delivery) registered."""
    settings = TelegramSettings.model_validate(
        {
            "telegram_bot_token": telegram_api.token,
            "telegram_api_base_url": telegram_api.base_url,
            "telegram_mode": "polling",
        }
    )
    channel = TelegramChannel(settings)
    channel_registry.reset()
    channel_registry.register("telegram", lambda: channel)
    for fn in (chat_command, *FUNCTIONS):
        registry.register(fn)
    agent.runtime.register_functions()
    before = platforms.installed()
    yield channel
    platforms.install(before)
    channel_registry.reset()
    channel.api.close()


def use_keeper(keeper: AcknowledgementKeeper) -> AcknowledgementKeeper:
    platforms.install(ChannelPlatforms(channel_registry.channel_or_none, keeper))
    return keeper


def say(runtime: Runtime, text: str, **extra: Any) -> str:
    """Publish a message in the Telegram chat from its owner (DM_POLICY=pairing serves the
    owner: no asker); returns the event id."""
    data = {
        "message": text,
        "session_key": f"telegram-{CHAT}",
        "channel": "telegram",
        "sender": {"id": "u1", "name": "Ana"},
        "destination": {"chat_id": CHAT},
        **extra,
    }
    return publish({"name": MESSAGE_RECEIVED, "data": data}, runtime=runtime).event_id


def typing_count(fake: FakeTelegramApi) -> int:
    return len(fake.calls_to("sendChatAction"))


def give_up_on(runtime: Runtime, text: str) -> None:
    """Record a reply of the chat that delivery gave up on."""
    data = {
        "response": text,
        "run_id": "run-0",
        "channel": "telegram",
        "destination": {"chat_id": CHAT},
    }
    event = {"name": REPLY_READY, "id": "r0", "data": data}
    reply = UndeliveredReply(
        reply_id="r0", run_id="run-0", channel="telegram", chat_id=CHAT, event=event
    )
    redis_records(runtime).undelivered.record(reply)


def test_arrival_typing_is_shown_before_the_model_is_asked(
    agent: AgentRig, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given the process's keeper on its own threads, and a model that notes what it saw
    keeper = use_keeper(AcknowledgementKeeper())
    seen: list[int] = []

    def model(api: str, body: Any) -> Reply:
        keeper.settle()  # whatever the keeper had to send by now is out
        seen.append(typing_count(telegram_api))
        return Reply.answer("Hello.")

    agent.model.respond_with(model)
    # When a message is answered
    say(agent.runtime, "hi")
    drain(agent.runtime)
    # Then typing had been shown when the model was asked
    assert seen and seen[0] == 1, f"typing calls seen by the model: {seen}"
    assert [m["text"] for m in telegram_api.messages] == ["Hello."]


def test_arrival_typing_stops_once_the_turn_is_over(
    agent: AgentRig,
    clock: ManualClock,
    telegram: TelegramChannel,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given a turn that was acknowledged and answered
    keeper = use_keeper(AcknowledgementKeeper(clock=clock, threaded=False))
    agent.model.script(Reply.answer("Hello."))
    event_id = say(agent.runtime, "hi")
    drain(agent.runtime)
    keeper.run_due()
    assert typing_count(telegram_api) == 1
    run = agent.runtime.ledger.run(run_id_for(MESSAGE_HANDLER, event_id))
    assert run is not None and run.status == "completed", run
    # When its refresh time passes
    clock.advance(telegram.acknowledge_every)
    keeper.run_due()
    # Then no typing follows the answer, and the keeper let the turn go
    assert typing_count(telegram_api) == 1
    assert keeper.kept() == set()


def test_arrival_an_undelivered_reply_goes_out_before_the_answer(
    agent: AgentRig, clock: ManualClock, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a reply of the chat that delivery gave up on
    use_keeper(AcknowledgementKeeper(clock=clock, threaded=False))
    give_up_on(agent.runtime, "the old answer")
    # When the person writes again
    agent.model.script(Reply.answer("Hello."))
    say(agent.runtime, "hi")
    drain(agent.runtime)
    # Then the old reply reached the chat first, then the answer
    assert [m["text"] for m in telegram_api.messages] == ["the old answer", "Hello."]
    assert redis_records(agent.runtime).undelivered.all() == []


def test_arrival_a_chat_command_redelivers_without_typing(
    agent: AgentRig, clock: ManualClock, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a reply of the chat that delivery gave up on
    keeper = use_keeper(AcknowledgementKeeper(clock=clock, threaded=False))
    give_up_on(agent.runtime, "the old answer")
    # When the person sends a command
    say(agent.runtime, "/help", command="help")
    drain(agent.runtime)
    keeper.run_due()
    # Then the old reply went out before the command's answer, and no typing was shown
    texts = [m["text"] for m in telegram_api.messages]
    assert texts[0] == "the old answer" and len(texts) == 2, texts
    assert typing_count(telegram_api) == 0
    assert agent.model.requests == []


def test_arrival_a_message_steered_into_a_live_turn_is_acknowledged_and_redelivers(
    agent: AgentRig, clock: ManualClock, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a turn parked on its offloaded model call, typing shown
    keeper = use_keeper(AcknowledgementKeeper(clock=clock, threaded=False))
    settings = make_settings(
        agent.workspace, agent.model, model_calls="gateway", stream_replies=False
    )
    set_agent_deps(build_deps(settings))
    agent.runtime.call_servers.clear()  # no gateway yet: the call waits
    agent.model.script(Reply.answer("Coffee, then."), Reply.answer("Tea it is."))
    first = say(agent.runtime, "make coffee")
    drain(agent.runtime)
    keeper.run_due()
    assert typing_count(telegram_api) == 1
    # When a reply is given up on meanwhile and another message is steered into the turn
    give_up_on(agent.runtime, "the old answer")
    second = say(agent.runtime, "actually, make it tea")
    drain(agent.runtime)
    steered = agent.runtime.ledger.run(run_id_for(MESSAGE_HANDLER, second))
    assert steered is not None and steered.status == "steered", steered
    agent.runtime.call_servers.append(ModelGateway(agent.runtime, settings).serve_due)
    drain(agent.runtime)
    keeper.run_due()
    # Then the turn acknowledged it once when it took it (its own typing goes on), and the
    # old reply went out before the answer to it (after what the turn had said already)
    turn = agent.runtime.ledger.run(run_id_for(MESSAGE_HANDLER, first))
    assert turn is not None and turn.status == "completed", turn
    assert typing_count(telegram_api) == 2
    texts = [m["text"] for m in telegram_api.messages]
    assert texts == ["Coffee, then.", "the old answer", "Tea it is."], texts
