"""A reply the platform keeps refusing is retried with backoff for `DELIVERY_RETRY_FOR`, then
kept as undelivered (no "Sorry" that would fail the same way) and delivered, once, when the
person writes next."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from channels.delivery import SEND_REPLY
from channels.telegram.channel import TelegramChannel
from harness.cli import app
from harness.events import MESSAGE_RECEIVED, REPLY_READY
from harness.records.undelivered import RedisUndeliveredReplies, UndeliveredReply
from harness.runtime import Runtime, publish, run_id_for
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from harness.settings import get_settings
from tests.channels.channel_doubles import arriving_turn, channel_bus
from tests.fakes.telegram_api import FakeTelegramApi
from tests.runtime_fixtures import ManualClock

CHAT = {"chat_id": "1111111"}
SEND = run_id_for(SEND_REPLY, "reply-1")


@pytest.fixture
def bus(
    runtime: Runtime,
    registry: FunctionRegistry,
    telegram: TelegramChannel,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Runtime]:
    """The channel functions and a turn that only arrives (its first step redelivers) on a
    runtime, Telegram on the fake, two minutes of retries."""
    monkeypatch.setenv("DELIVERY_RETRY_FOR", "2m")
    get_settings.cache_clear()
    arriving_turn(registry)
    yield from channel_bus(runtime, registry, telegram=telegram)
    get_settings.cache_clear()


def reply(text: str = "the answer") -> dict[str, Any]:
    data = {"response": text, "channel": "telegram", "destination": CHAT, "run_id": "r-agent"}
    return {"name": REPLY_READY, "id": "reply-1", "data": data}


def message(event_id: str) -> dict[str, Any]:
    data = {
        "message": "hello?",
        "session_key": "telegram-1111111",
        "channel": "telegram",
        "sender": {"id": "u1", "name": "Alice"},
        "destination": CHAT,
    }
    return {"name": MESSAGE_RECEIVED, "id": event_id, "data": data}


def run_for(bus: Runtime, clock: ManualClock, seconds: int) -> None:
    for _ in range(seconds // 5):
        clock.advance(5)
        drain(bus)


def give_up_while_telegram_is_down(
    bus: Runtime, clock: ManualClock, telegram_api: FakeTelegramApi
) -> None:
    """A reply fails on every attempt for four minutes, past the two of retries, so that
    `send-reply` gives up and keeps it; then Telegram recovers."""
    telegram_api.fail_next(1000, status=500, method="sendMessage")
    publish(reply(), runtime=bus)
    drain(bus)
    run_for(bus, clock, 240)
    telegram_api.recover()


def test_send_reply_that_keeps_failing_retries_for_the_configured_time_then_is_kept(
    bus: Runtime, clock: ManualClock, telegram_api: FakeTelegramApi
) -> None:
    # Given Telegram fails every sendMessage
    telegram_api.fail_next(1000, status=500, method="sendMessage")
    publish(reply(), runtime=bus)
    # When a minute passes, then three more
    drain(bus)
    run_for(bus, clock, 60)
    still_trying = bus.ledger.run(SEND)
    run_for(bus, clock, 180)
    # Then it was still retrying after a minute, with backoff, and gave up after two
    assert still_trying is not None and still_trying.status == "sleeping", f"got {still_trying}"
    attempts = len(telegram_api.calls_to("sendMessage"))
    assert 5 <= attempts <= 12, f"expected exponential backoff over 2 minutes, got {attempts}"
    run = bus.ledger.run(SEND)
    assert run is not None and run.status == "failed", f"got {run}"
    assert "harness runs redeliver" in run.error, run.error
    (kept,) = _kept(bus)
    assert (kept.reply_id, kept.run_id, kept.chat_id) == ("reply-1", SEND, "1111111")
    assert telegram_api.messages == [], "no 'Sorry' notice: it would fail the same way"


def test_send_reply_honours_retry_after(
    bus: Runtime, clock: ManualClock, telegram_api: FakeTelegramApi
) -> None:
    # Given Telegram asks us to wait 40 seconds
    telegram_api.fail_next(1, status=429, retry_after=40, method="sendMessage")
    publish(reply(), runtime=bus)
    drain(bus)
    # When 35 seconds pass, then 10 more
    run_for(bus, clock, 35)
    early = list(telegram_api.messages)
    run_for(bus, clock, 10)
    # Then it waited, then delivered
    assert early == [], "posted before retry_after had passed"
    assert [m["text"] for m in telegram_api.messages] == ["the answer"]


def test_undelivered_reply_goes_out_once_when_the_person_writes_next(
    bus: Runtime, clock: ManualClock, telegram_api: FakeTelegramApi
) -> None:
    # Given a reply given up on while Telegram was down, and Telegram back
    give_up_while_telegram_is_down(bus, clock, telegram_api)
    assert len(_kept(bus)) == 1
    # When the person writes twice
    publish(message("m-next"), runtime=bus)
    drain(bus)
    publish(message("m-later"), runtime=bus)
    drain(bus)
    # Then the kept reply was posted once, and nothing is left undelivered
    assert [m["text"] for m in telegram_api.messages] == ["the answer"]
    assert _kept(bus) == []


def test_undelivered_reply_is_marked_in_harness_runs_and_redelivered_from_there(
    bus: Runtime, clock: ManualClock, telegram_api: FakeTelegramApi
) -> None:
    # Given a reply given up on, and Telegram back
    give_up_while_telegram_is_down(bus, clock, telegram_api)
    # When the operator lists the runs, then redelivers by a prefix of the run id
    listed = CliRunner().invoke(app, ["runs"])
    redelivered = CliRunner().invoke(app, ["runs", "redeliver", SEND[:20]])
    drain(bus)
    # Then the run was marked, and the reply went out once
    assert listed.exit_code == 0 and "failed undelivered" in listed.output, listed.output
    assert redelivered.exit_code == 0, redelivered.output
    assert [m["text"] for m in telegram_api.messages] == ["the answer"]
    assert _kept(bus) == []


def test_undelivered_reply_redelivered_with_json_says_what_was_published(
    bus: Runtime, clock: ManualClock, telegram_api: FakeTelegramApi
) -> None:
    # Given a reply given up on, and Telegram back
    give_up_while_telegram_is_down(bus, clock, telegram_api)
    # When the operator redelivers it with --json
    result = CliRunner().invoke(app, ["runs", "redeliver", SEND, "--json"])
    # Then stdout is the run, the reply and the event published again (docs/cli.md)
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert set(shown) == {"run_id", "reply_id", "event_id"} and shown["run_id"] == SEND, shown


def _kept(bus: Runtime) -> list[UndeliveredReply]:
    return RedisUndeliveredReplies(bus.redis, bus.keys).all()
