"""`send-reply` records one step per reply (`deliver`: the posts, then the completion), and a
retry of that step, after a crash anywhere in it, posts nothing twice and still completes;
a delivery an earlier version left half done (its `send` recorded, its `complete` not)
finishes the same way."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from channels.delivery import DELIVER_STEP, SEND_REPLY, DeliveryLog
from channels.slack.channel import SlackChannel
from channels.telegram.channel import TelegramChannel
from harness.events import REPLY_READY, Destination
from harness.runtime import Runtime, publish, run_id_for
from harness.runtime.ledger import RunRecord
from harness.runtime.testing import drain
from tests.channels.channel_doubles import use_channels
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi
from tests.runtime_fixtures import ManualClock

MESSAGE = {
    "chat_id": "C123ABC456",
    "message_id": "1515449522.000016",
    "thread_id": "1515449522.000016",
}
USER_MESSAGE = Destination(chat_id=MESSAGE["chat_id"], message_id=MESSAGE["message_id"])
LONG_REPLY = "\n\n".join(letter * 3000 for letter in "ABC")


class WorkerKilled(BaseException):
    """Stands for SIGKILL: not an `Exception`, so nothing is recorded or retried; the run keeps
    its lease until the lease runs out, as after a real crash."""


class DiesBeforeCompleting:
    """The real Slack channel, except that the process "dies" the first time it is about to
    mark a turn complete: after every chunk was posted and recorded, before the step's record."""

    def __init__(self, channel: SlackChannel) -> None:
        self._channel = channel
        self.died = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)

    def complete(self, destination: Destination, channel_meta: Mapping[str, Any]) -> None:
        if not self.died:
            self.died = True
            raise WorkerKilled()
        self._channel.complete(destination, channel_meta)


def _reply(response: str, event_id: str, channel: str = "slack") -> dict[str, Any]:
    destination = MESSAGE if channel == "slack" else {"chat_id": "1111111"}
    data = {"response": response, "channel": channel, "destination": destination,
            "channel_meta": {}, "run_id": "r-agent"}  # fmt: skip
    return {"name": REPLY_READY, "id": event_id, "data": data}


def _assert_completed(bus: Runtime, slack_api: FakeSlackApi, reply_id: str) -> RunRecord:
    """Reply `reply_id`'s delivery completed and :eyes: became :white_check_mark:."""
    done = (MESSAGE["chat_id"], MESSAGE["message_id"], "white_check_mark")
    assert slack_api.reactions == {done}, f"got {slack_api.reactions}"
    run = bus.ledger.run(run_id_for(SEND_REPLY, reply_id))
    assert run is not None and run.status == "completed", f"got {run}"
    return run


def test_a_reply_is_delivered_in_one_recorded_step(
    bus: Runtime, telegram: TelegramChannel, telegram_api: FakeTelegramApi
) -> None:
    # Given a three-chunk reply to a Telegram chat
    use_channels(telegram=telegram)
    publish(_reply(LONG_REPLY, "reply-1", channel="telegram"), runtime=bus)
    # When it is delivered
    drain(bus)
    # Then its run recorded one step, holding the three posted message ids
    run_id = run_id_for(SEND_REPLY, "reply-1")
    journal = bus.ledger.journal(run_id)
    assert sorted(journal) == [f"{DELIVER_STEP}:0"], f"got steps {sorted(journal)}"
    posted = [str(m["message_id"]) for m in telegram_api.messages]
    assert len(posted) == 3 and journal[f"{DELIVER_STEP}:0"]["v"] == posted


def test_a_crash_between_the_posts_and_the_completion_posts_nothing_twice(
    bus: Runtime, clock: ManualClock, slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    # Given the user's message carries :eyes:, and the worker delivering the reply dies after
    # posting all of it, before it marks the turn complete
    dying = DiesBeforeCompleting(slack)
    use_channels(slack=dying)  # type: ignore[arg-type]
    slack.acknowledge(USER_MESSAGE, {})
    publish(_reply(LONG_REPLY, "reply-7"), runtime=bus)
    with pytest.raises(WorkerKilled):
        drain(bus)
    assert len(slack_api.messages) == 3, "the crash comes after the three posts"
    eyes = (MESSAGE["chat_id"], MESSAGE["message_id"], "eyes")
    assert slack_api.reactions == {eyes}, "the crash comes before the completion"
    # When its lease runs out and the run is retried
    clock.advance(bus.lease_ttl + 1)
    drain(bus)
    # Then each chunk is in the thread once, and :eyes: became :white_check_mark:
    assert len(slack_api.messages) == 3, f"posted again: {slack_api.messages}"
    _assert_completed(bus, slack_api, "reply-7")


def test_a_delivery_an_earlier_version_left_after_its_send_completes_without_posting(
    bus: Runtime, slack: SlackChannel, slack_api: FakeSlackApi
) -> None:
    # Given a reply an earlier version delivered in three steps, which died after recording
    # `deadline:0` and `send:0` (the chunk posted and logged), before `complete:0`
    use_channels(slack=slack)
    slack.acknowledge(USER_MESSAGE, {})
    publish(_reply("It is done.", "reply-8"), runtime=bus)
    log = DeliveryLog(bus, "reply-8")
    log.begin()
    destination = Destination.model_validate(MESSAGE)
    posted = slack.send_reply("It is done.", destination, {}, "reply-8", on_chunk_sent=log.record)
    now = bus.now_ms()
    old_steps = {
        "deadline:0": {"s": now, "t": now, "n": 1, "k": "run", "v": now + 600_000},
        "send:0": {"s": now, "t": now, "n": 1, "k": "run", "v": posted},
    }
    run_id = run_id_for(SEND_REPLY, "reply-8")
    bus.redis.hset(
        bus.keys.journal(run_id), mapping={k: json.dumps(v) for k, v in old_steps.items()}
    )
    # When this version runs it
    drain(bus)
    # Then nothing was posted again, the turn is marked complete, and the run completed
    assert [m["text"] for m in slack_api.messages] == ["It is done."]
    run = _assert_completed(bus, slack_api, "reply-8")
    assert run.result == {"posted": posted}
