"""The user hears once, briefly, when a turn fails (never the error itself), and in cancel mode
that the agent is reconsidering; cosmetic failures and notices' own failures stay silent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from channels.acknowledge import ACKNOWLEDGE
from channels.delivery import SEND_REPLY
from channels.notices import FAILURE_TEXT, NOTICE_KEY, RECONSIDER_TEXT, REFUSED_TEXT
from channels.telegram.channel import TelegramChannel
from harness.agent.deps import build_deps, set_agent_deps
from harness.agent.handlers import HANDLE_MESSAGE, handle_message
from harness.events import FUNCTION_CANCELLED, FUNCTION_FAILED, MESSAGE_RECEIVED, REPLY_READY
from harness.runtime import (
    Context,
    Runtime,
    Singleton,
    event,
    function,
    publish,
    run_id_for,
)
from harness.runtime.functions import FunctionRegistry, SingletonMode
from harness.runtime.testing import drain
from tests.agent.conftest import make_settings
from tests.channels import payloads
from tests.channels.channel_doubles import channel_bus
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi

SECRET_ERROR = "upstream said: invalid x-api-key sk-live-0123456789"


@pytest.fixture
def bus(
    runtime: Runtime, registry: FunctionRegistry, telegram: TelegramChannel
) -> Iterator[Runtime]:
    """The channel functions on the runtime, with Telegram as the only platform."""
    yield from channel_bus(runtime, registry, telegram=telegram)


def message(text: str, update_id: int) -> dict[str, Any]:
    """The event the Telegram webhook publishes for a private message."""
    data = {
        "message": text,
        "session_key": "telegram-1111111",
        "channel": "telegram",
        "sender": {"id": "1111111", "name": "Alice"},
        "destination": {"chat_id": "1111111", "message_id": str(update_id)},
        "channel_meta": {"update_id": update_id},
    }
    return {"name": MESSAGE_RECEIVED, "id": f"telegram-{payloads.BOT_ID}-{update_id}", "data": data}


def stand_in_agent(
    registry: FunctionRegistry,
    runtime: Runtime,
    *,
    fail: bool = False,
    mode: SingletonMode = "steer",
) -> None:
    """A stand-in for the agent under its function id: replies with the message, or fails with
    an error whose text must never reach the chat. On "first" the user writes again mid-run."""

    @function(
        id=HANDLE_MESSAGE,
        trigger=event(MESSAGE_RECEIVED),
        retries=0,
        singleton=Singleton(key="event.data.session_key", mode=mode),
        registry=registry,
    )
    def agent(ctx: Context) -> None:
        text = ctx.event.data["message"]
        ctx.step.run("think", lambda: None)
        if fail:
            raise RuntimeError(SECRET_ERROR)
        if text == "first":
            publish(message("second", 2), runtime=runtime)
        ctx.step.run("act", lambda: None)
        reply = {k: ctx.event.data[k] for k in ("channel", "destination", "channel_meta")}
        reply.update(response=f"answer: {text}", run_id=ctx.run_id)
        ctx.step.send_event("reply", {"name": REPLY_READY, "data": reply})

    runtime.register_functions()


def sent_texts(fake: FakeTelegramApi) -> list[str]:
    return [str(m["text"]) for m in fake.messages]


def test_failure_handler_tells_the_user_once_without_the_error(
    bus: Runtime, registry: FunctionRegistry, telegram_api: FakeTelegramApi
) -> None:
    # Given an agent that fails with a secret in its error
    stand_in_agent(registry, bus, fail=True)
    # When a message arrives and everything runs (twice over, to catch repeats)
    result = publish(message("hello", 1), runtime=bus)
    drain(bus)
    drain(bus)
    # Then the chat got exactly one short notice naming the run, and nothing of the error
    agent_run = run_id_for(HANDLE_MESSAGE, result.event_id)
    assert sent_texts(telegram_api) == [FAILURE_TEXT.format(run_id=agent_run)]
    (notice,) = telegram_api.messages
    assert "sk-live" not in notice["raw_text"] and "RuntimeError" not in notice["raw_text"]
    assert notice["reply_to_message"] == {"message_id": 1}, "the notice answers the message"


def test_failure_handler_ignores_a_repeated_failure_event(
    bus: Runtime, telegram_api: FakeTelegramApi
) -> None:
    failed = {
        "name": FUNCTION_FAILED,
        "id": "failed:r-agent",
        "data": {"function_id": HANDLE_MESSAGE, "run_id": "r-agent", "event": message("hi", 1),
                 "error": SECRET_ERROR},
    }  # fmt: skip
    publish(failed, runtime=bus)
    publish(failed, runtime=bus)
    drain(bus)
    assert sent_texts(telegram_api) == [FAILURE_TEXT.format(run_id="r-agent")]


@pytest.mark.parametrize(
    ("function_id", "failed_event"),
    [
        (ACKNOWLEDGE, message("hi", 1)),
        ("nightly-report", {"name": "app/nightly", "data": {}}),
        (
            SEND_REPLY,
            {
                "name": REPLY_READY,
                "data": {
                    "response": "Sorry",
                    "channel": "telegram",
                    "destination": {"chat_id": "1111111"},
                    "channel_meta": {NOTICE_KEY: "failure"},
                    "run_id": "r-agent",
                },
            },
        ),
    ],
    ids=["cosmetic-function", "no-chat", "notice-delivery"],
)
def test_failure_handler_stays_silent_when_there_is_no_one_to_tell(
    bus: Runtime, telegram_api: FakeTelegramApi, function_id: str, failed_event: dict[str, Any]
) -> None:
    failed = {"function_id": function_id, "run_id": "r1", "event": failed_event, "error": "x"}
    publish({"name": FUNCTION_FAILED, "data": failed}, runtime=bus)
    drain(bus)
    assert telegram_api.messages == []


def test_cancel_mode_tells_the_user_the_agent_is_reconsidering(
    bus: Runtime, registry: FunctionRegistry, telegram_api: FakeTelegramApi
) -> None:
    # Given the agent in cancel mode, and the user writing again while it works on "first"
    stand_in_agent(registry, bus, mode="cancel")
    # When everything runs
    publish(message("first", 1), runtime=bus)
    drain(bus)
    # Then the chat is told once that the agent is reconsidering, and gets the newer answer
    assert sorted(sent_texts(telegram_api)) == sorted([RECONSIDER_TEXT, "answer: second"])
    notice = next(m for m in telegram_api.messages if m["text"] == RECONSIDER_TEXT)
    assert notice["reply_to_message"] == {"message_id": 1}, "the notice answers the old message"


def test_a_run_cancelled_from_the_command_line_gets_no_notice(
    bus: Runtime, telegram_api: FakeTelegramApi
) -> None:
    cancelled = {
        "function_id": HANDLE_MESSAGE,
        "run_id": "r-agent",
        "event": message("hi", 1),
        "reason": "cancelled from the command line",
    }
    publish({"name": FUNCTION_CANCELLED, "data": cancelled}, runtime=bus)
    drain(bus)
    assert telegram_api.messages == []


@pytest.mark.parametrize(
    ("refusal", "reason"),
    [
        (Reply.error(401), "the model provider refused the API key (401 authentication_error): "
         "check ANTHROPIC_API_KEY"),
        (Reply.error(402, "Your credit balance is too low", error_type="billing_error"),
         "the model provider says the account's quota or credit is used up (402 billing_error): "
         "add credit or raise the limit of the account of ANTHROPIC_API_KEY"),
        (Reply.error(404), "the model provider does not know the model (404 not_found_error): "
         "check AGENT_MODEL"),
    ],
    ids=["key", "quota", "model"],
)  # fmt: skip
def test_failure_notice_says_what_to_fix_when_the_model_provider_refused(
    bus: Runtime,
    registry: FunctionRegistry,
    telegram_api: FakeTelegramApi,
    model_server: ModelServer,
    tmp_path: Path,
    refusal: Reply,
    reason: str,
) -> None:
    # Given the real agent, whose model provider refuses the call
    registry.register(handle_message)
    bus.register_functions()
    set_agent_deps(build_deps(make_settings(tmp_path / "workspace", model_server)))
    model_server.script(refusal)
    try:
        # When a message arrives on Telegram and everything runs
        result = publish(message("hello", 1), runtime=bus)
        drain(bus)
    finally:
        set_agent_deps(None)
    # Then the chat is told once what to fix, with the run id, and nothing else of the error
    agent_run = run_id_for(HANDLE_MESSAGE, result.event_id)
    assert sent_texts(telegram_api) == [REFUSED_TEXT.format(reason=reason, run_id=agent_run)]
    assert model_server.api_key not in telegram_api.messages[0]["raw_text"]
