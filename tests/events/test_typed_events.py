"""Built-in events typed end to end, and the wire form of a fleet recorded before that."""

from __future__ import annotations

import json

import pytest

from harness.addresses import STRANGER, Asker, ChannelMeta
from harness.errors import InvalidEventError
from harness.events import (
    BUILTIN_DATA,
    ApprovalClosed,
    Destination,
    Event,
    MessageReceived,
    MessageReceivedEvent,
    ReplyTarget,
    SubagentTask,
    parse_event,
    read_builtin,
    validate_event,
)

# An `agent.message.received` exactly as the Telegram channel published it before
# `channel_meta` was typed (recorded from the old code): the core's keys inside the dict.
OLD_TELEGRAM_MESSAGE = json.loads("""{
  "name": "agent.message.received", "id": "telegram-1-900", "ts": 1700000000000,
  "data": {
    "message": "look", "session_key": "telegram-42", "channel": "telegram",
    "sender": {"id": "42", "name": "Alice", "username": "alice"},
    "destination": {"chat_id": "42", "message_id": "7", "thread_id": null},
    "channel_meta": {
      "update_id": 900, "chat_type": "private", "has_photo": true,
      "media_group_id": "album-1",
      "access": {"subjects": ["telegram:chat:42", "telegram:user:42"],
                 "pairing_subject": "telegram:user:42", "label": "Alice (@alice)",
                 "allowlisted": false},
      "approvals": true
    },
    "attachments": [{"kind": "photo", "ref": "F1"}]
  }
}""")

# A sub-agent's task as an old run recorded it: its reply target's meta is the old dict.
OLD_SUBAGENT_TASK = {
    "task": "sum it up",
    "reply": {
        "channel": "slack",
        "destination": {"chat_id": "C1", "thread_id": "1.2"},
        "channel_meta": {"team_id": "T1", "approvals": True, "access": {"subjects": []}},
        "session_key": "slack-C1-1.2",
    },
}


def test_events_an_old_shape_message_loads_with_typed_fields() -> None:
    # Given a message recorded by the old code
    # When the new code reads it
    data = MessageReceived.from_event(Event.model_validate(OLD_TELEGRAM_MESSAGE))
    # Then the core's keys are typed fields and the platform's keys stay the platform's
    meta = data.channel_meta
    assert meta.asker == Asker(
        subjects=["telegram:chat:42", "telegram:user:42"],
        pairing_subject="telegram:user:42",
        label="Alice (@alice)",
    )
    assert meta.can_answer is True
    assert meta.album == "album-1"
    assert meta.platform == {"update_id": 900, "chat_type": "private", "has_photo": True}


def test_events_the_wire_form_is_unchanged_both_ways() -> None:
    # Given an old-shape message
    # When the new code validates it, as publishing does
    event = validate_event(Event.model_validate(OLD_TELEGRAM_MESSAGE))
    # Then channel_meta is the same JSON object, so old workers in a fleet mid-upgrade read it
    assert event.data["channel_meta"] == OLD_TELEGRAM_MESSAGE["data"]["channel_meta"]


def test_events_an_old_run_record_with_a_reply_target_loads() -> None:
    # Given a sub-agent task recorded by the old code, with a malformed access description
    # When the new code reads it
    task = SubagentTask.model_validate(OLD_SUBAGENT_TASK)
    # Then the target can answer approvals, and the bad description reads as a stranger,
    # never as the owner (which is what None would mean)
    assert task.reply is not None
    assert task.reply.channel_meta.can_answer is True
    assert task.reply.channel_meta.asker == STRANGER
    assert task.reply.channel_meta.platform == {"team_id": "T1"}


def test_events_owner_meta_is_an_empty_object_on_the_wire() -> None:
    # Given a reply target with no asker, no album, no approvals (harness send, the API)
    target = ReplyTarget(channel="cli", destination=Destination(chat_id="s"))
    # When it is dumped
    # Then channel_meta is {} as before: no nulls the old code did not write
    assert target.model_dump(mode="json")["channel_meta"] == {}


def test_events_each_model_makes_its_own_event() -> None:
    # Given a built-in event's data
    closed = ApprovalClosed(approval_id="a1", reason="Expired")
    # When it is made an event
    event = closed.to_event(id="approval-closed-a1")
    # Then the name comes from the model and the data reads back as it
    assert (event.name, event.id) == ("agent.approval.closed", "approval-closed-a1")
    assert ApprovalClosed.from_event(event) == closed
    assert all(BUILTIN_DATA[model.event_name] is model for model in BUILTIN_DATA.values())


def test_events_read_builtin_tells_events_apart_by_name() -> None:
    # Given an old-shape message and a user's own event
    message = Event.model_validate(OLD_TELEGRAM_MESSAGE)
    mine = Event(name="orders.created", data={"anything": [1, 2]})
    # When each is read as a built-in event
    typed = read_builtin(message)
    # Then the message is typed by its name, and the user's event is not built in
    assert isinstance(typed, MessageReceivedEvent)
    assert typed.data.channel_meta.album == "album-1"
    assert read_builtin(mine) is None


def test_events_invalid_builtin_data_names_the_field_without_the_union_tag() -> None:
    # Given a message whose session key is missing
    raw = {**OLD_TELEGRAM_MESSAGE, "data": {**OLD_TELEGRAM_MESSAGE["data"]}}
    del raw["data"]["session_key"]
    # When it is parsed
    with pytest.raises(InvalidEventError) as caught:
        parse_event(raw)
    # Then the error names the field as the old validation did
    assert str(caught.value) == (
        "invalid data for event 'agent.message.received': session_key: Field required"
    )


def test_events_channel_meta_plus_keeps_typed_fields() -> None:
    # Given a meta with an asker
    meta = ChannelMeta(asker=STRANGER, can_answer=True)
    # When a platform key is added
    more = meta.plus({"harness_notice": "failure"})
    # Then the typed fields stay and the key is the platform part
    assert (more.asker, more.can_answer) == (STRANGER, True)
    assert more.platform == {"harness_notice": "failure"}
