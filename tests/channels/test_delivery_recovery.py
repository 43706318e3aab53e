"""A crash between Slack's answer and our record does not post a reply chunk twice: each chunk
carries message metadata naming the delivery, and a retried delivery looks for it in the thread
before posting again."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

import channels.delivery
from channels.slack.channel import DELIVERY_EVENT, SlackChannel
from channels.slack.format import to_chunks
from harness.events import REPLY_READY, Destination
from harness.records.deliveries import RedisDeliveryRecords
from harness.records.stores import redis_records
from harness.runtime import Runtime, publish
from harness.runtime.functions import FunctionRegistry
from harness.runtime.testing import drain
from tests.channels.channel_doubles import channel_bus
from tests.fakes.slack_api import FakeSlackApi
from tests.runtime_fixtures import ManualClock

THREAD = {"chat_id": "C123ABC456", "thread_id": "1355517523.000005"}
LONG_REPLY = "\n\n".join(letter * 3000 for letter in "ABC")


class WorkerDied(Exception):
    """Stands for the worker dying: raised where a posted chunk would be recorded."""


class DiesBeforeRecording(RedisDeliveryRecords):
    """The runtime's delivery records, except that recording chunk `index` of a reply fails
    once: the platform has the message, our record does not."""

    def __init__(self, inner: RedisDeliveryRecords, index: int) -> None:
        self.__dict__.update(inner.__dict__)
        self.index, self.died = index, False

    def record(self, reply_id: str, index: int, message_id: str) -> None:
        if index == self.index and not self.died:
            self.died = True
            raise WorkerDied(f"killed after posting chunk {index} as {message_id}")
        super().record(reply_id, index, message_id)


@pytest.fixture
def bus(runtime: Runtime, registry: FunctionRegistry, slack: SlackChannel) -> Iterator[Runtime]:
    """The channel functions on the runtime, replying through the fake Slack."""
    yield from channel_bus(runtime, registry, slack=slack)


def _reply(response: str) -> dict[str, object]:
    data = {
        "response": response,
        "channel": "slack",
        "destination": THREAD,
        "channel_meta": {},
        "run_id": "r-agent",
    }
    return {"name": REPLY_READY, "id": "reply-7", "data": data}


@pytest.mark.parametrize("dies_at", [0, 1])
def test_a_crash_after_slack_answered_posts_no_chunk_twice(
    bus: Runtime,
    clock: ManualClock,
    slack_api: FakeSlackApi,
    dies_at: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a three-message reply whose delivery dies right after Slack took chunk `dies_at`
    chunks = to_chunks(LONG_REPLY)
    assert len(chunks) == 3
    records = DiesBeforeRecording(RedisDeliveryRecords(bus.redis, bus.keys), dies_at)
    dying = replace(redis_records(bus), deliveries=records)
    monkeypatch.setattr(channels.delivery, "redis_records", lambda _runtime: dying)
    publish(_reply(LONG_REPLY), runtime=bus)
    # When the delivery runs, dies, and is retried to the end
    drain(bus)
    assert records.died, "the delivery should have died once"
    clock.advance(600)
    drain(bus)
    # Then the thread holds each chunk exactly once, in order, each tagged with its delivery
    posted = slack_api.messages
    assert [m["text"] for m in posted] == chunks
    assert [m["metadata"] for m in posted] == [
        {"event_type": DELIVERY_EVENT, "event_payload": {"delivery_id": "reply-7", "chunk": i}}
        for i in range(3)
    ]
    # And the retry looked in the thread before posting again
    assert slack_api.calls_to("conversations.replies")


def test_a_first_attempt_does_not_read_the_thread(bus: Runtime, slack_api: FakeSlackApi) -> None:
    # Given a reply delivered without trouble
    publish(_reply("Hello"), runtime=bus)
    drain(bus)
    # Then it was posted once, without spending a history call on it
    assert [m["text"] for m in slack_api.messages] == ["Hello"]
    assert slack_api.calls_to("conversations.replies") == []


def test_chunks_posted_outside_a_thread_are_found_in_the_channel(
    slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    # Given a reply posted in a DM, outside any thread, next to another reply's message
    dm = Destination(chat_id="D024BE91L")
    slack.send_reply("Other.", dm, {}, "reply-6")
    slack.send_reply(LONG_REPLY, dm, {}, "reply-7")
    # When a retry looks for what reply-7 already posted
    found = slack.find_posted(LONG_REPLY, dm, {}, "reply-7")
    # Then it finds its three chunks by their metadata, and nothing of the other reply
    by_ts = {m["ts"]: m for m in slack_api.messages}
    assert sorted(found) == [0, 1, 2]
    assert [by_ts[found[i]]["text"] for i in range(3)] == to_chunks(LONG_REPLY)
    assert slack_api.calls_to("conversations.history")


def test_a_long_thread_is_read_page_by_page(slack: SlackChannel, slack_api: FakeSlackApi) -> None:
    # Given a thread that Slack lists two messages a page, holding a three-chunk reply
    slack_api.page_limit = 2
    thread = Destination(chat_id="C123ABC456", thread_id="1355517523.000005")
    posted = slack.send_reply(LONG_REPLY, thread, {}, "reply-7")
    # When a retry looks for what the reply already posted
    found = slack.find_posted(LONG_REPLY, thread, {}, "reply-7")
    # Then it found every chunk, the last one on the second page
    assert found == dict(enumerate(posted))
    assert len(slack_api.calls_to("conversations.replies")) == 2
