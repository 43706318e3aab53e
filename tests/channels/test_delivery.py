"""`send-reply` posts each chunk of a reply exactly once, across retries, then completes the
turn; permanent platform errors fail it at once."""

from __future__ import annotations

from typing import Any

from channels.base import ChunkSent
from channels.delivery import SEND_REPLY, DeliveryLog
from channels.notices import FAILURE_TEXT
from channels.slack.channel import SlackChannel
from channels.telegram.channel import TelegramChannel
from harness.events import REPLY_READY, Destination
from harness.records.deliveries import RedisDeliveryRecords
from harness.runtime import Runtime, publish, run_id_for
from harness.runtime.testing import drain
from tests.channels.channel_doubles import AfterChunkPosted, use_channels
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi
from tests.runtime_fixtures import ManualClock

LONG_REPLY = "\n\n".join(letter * 3000 for letter in "ABC")  # three Telegram messages


def reply_ready(
    channel: str, destination: dict[str, Any], response: str, event_id: str = "reply-1"
) -> dict[str, Any]:
    data = {
        "response": response,
        "channel": channel,
        "destination": destination,
        "channel_meta": {},
        "run_id": "r-agent",
    }
    return {"name": REPLY_READY, "id": event_id, "data": data}


class FailsAfterFirstChunkOnce(AfterChunkPosted):
    """The real Telegram channel, except that once its first chunk is posted the fake server
    is told to fail the next sendMessage (a 500), as a flaky network would."""

    def __init__(self, channel: TelegramChannel, fake: FakeTelegramApi) -> None:
        super().__init__(channel)
        self._fake = fake
        self.armed = False

    def chunk_posted(
        self, reply_key: str, index: int, message_id: str, record: ChunkSent | None
    ) -> None:
        super().chunk_posted(reply_key, index, message_id, record)
        if not self.armed:
            self.armed = True
            self._fake.fail_next(status=500, method="sendMessage")


def test_send_reply_retry_never_posts_a_chunk_twice(
    bus: Runtime, clock: ManualClock, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a three-chunk reply whose second chunk fails once on the platform
    use_channels(telegram=FailsAfterFirstChunkOnce(telegram, telegram_api))  # type: ignore[arg-type]
    publish(reply_ready("telegram", {"chat_id": "1111111"}, LONG_REPLY), runtime=bus)
    # When the run executes, fails on the second chunk, and is retried after its backoff
    drain(bus)
    assert [m["text"][0] for m in telegram_api.messages] == ["A"], "first attempt: chunk 0 only"
    clock.advance(30)
    drain(bus)
    # Then every chunk is on the platform exactly once, in order
    assert [m["text"][0] for m in telegram_api.messages] == ["A", "B", "C"]
    assert len(telegram_api.calls_to("sendMessage")) == 4, "3 chunks + 1 failed attempt"
    run = bus.ledger.run(run_id_for(SEND_REPLY, "reply-1"))
    assert run is not None and run.status == "completed", f"got {run}"


def test_send_reply_records_each_posted_chunk(
    bus: Runtime, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    use_channels(telegram=telegram)
    publish(reply_ready("telegram", {"chat_id": "1111111"}, LONG_REPLY), runtime=bus)
    drain(bus)
    posted = DeliveryLog(bus, "reply-1").posted()
    assert posted == {i: str(m["message_id"]) for i, m in enumerate(telegram_api.messages)}
    assert bus.redis.ttl(bus.keys.reply_chunks("reply-1")) > 0, "the record must expire"


def test_send_reply_replayed_after_success_posts_nothing_new(
    bus: Runtime, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a reply that was delivered
    use_channels(telegram=telegram)
    publish(reply_ready("telegram", {"chat_id": "1111111"}, "Hello"), runtime=bus)
    drain(bus)
    # When the same reply event is published again (a redelivery)
    again = publish(reply_ready("telegram", {"chat_id": "1111111"}, "Hello"), runtime=bus)
    drain(bus)
    # Then nothing more is posted
    assert again.duplicate
    assert len(telegram_api.messages) == 1


def test_send_reply_permanent_error_fails_at_once_and_the_user_is_told(
    bus: Runtime, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given Telegram refuses the reply for good (the message is too long for it, say)
    use_channels(telegram=telegram)
    telegram_api.fail_next(
        status=400, description="Bad Request: message is too long", method="sendMessage"
    )
    publish(reply_ready("telegram", {"chat_id": "1111111"}, "Hello"), runtime=bus)
    # When the run executes
    drain(bus)
    # Then it failed without retrying, and the failure handler told the user once
    run = bus.ledger.run(run_id_for(SEND_REPLY, "reply-1"))
    assert run is not None and run.status == "failed" and run.attempt == 0, f"got {run}"
    texts = [m["text"] for m in telegram_api.messages]
    assert texts == [FAILURE_TEXT.format(run_id=run_id_for(SEND_REPLY, "reply-1"))]


def test_send_reply_posts_in_the_slack_thread_and_marks_the_message_done(
    bus: Runtime, slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    # Given the user's message carries the bot's :eyes:
    use_channels(slack=slack)
    slack.acknowledge(Destination(chat_id="C123ABC456", message_id="1515449522.000016"), {})
    destination = {
        "chat_id": "C123ABC456",
        "message_id": "1515449522.000016",
        "thread_id": "1515449522.000016",
    }
    # When the reply is delivered
    publish(reply_ready("slack", destination, "It is **now**."), runtime=bus)
    drain(bus)
    # Then it is in the thread, and :eyes: became :white_check_mark:
    (message,) = slack_api.messages
    assert (message["thread_ts"], message["text"]) == ("1515449522.000016", "It is *now*.")
    assert slack_api.reactions == {("C123ABC456", "1515449522.000016", "white_check_mark")}


def test_send_reply_for_a_channel_without_a_platform_is_skipped(
    bus: Runtime, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given the terminal chat's reply (its client reads the events stream itself)
    use_channels(telegram=telegram)
    publish(reply_ready("cli", {"chat_id": "cli-default"}, "Hello"), runtime=bus)
    drain(bus)
    run = bus.ledger.run(run_id_for(SEND_REPLY, "reply-1"))
    assert run is not None and run.status == "completed"
    assert run.result == {"posted": []}
    assert telegram_api.calls == []


def test_a_delivery_reads_its_record_once_and_keeps_its_view_current(bus: Runtime) -> None:
    records = RedisDeliveryRecords(bus.redis, bus.keys)
    records.record("reply-2", 0, "m0")
    delivery = DeliveryLog(bus, "reply-2")
    assert delivery.posted() == {0: "m0"}

    records.record("reply-2", 5, "written-elsewhere")  # not read again in this attempt
    delivery.record(1, "m1")

    assert delivery.posted() == {0: "m0", 1: "m1"}
    assert DeliveryLog(bus, "reply-2").posted() == {0: "m0", 1: "m1", 5: "written-elsewhere"}
