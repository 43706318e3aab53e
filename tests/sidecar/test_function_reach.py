"""What a workspace function reaches through the sidecar's executor: the functions it may
invoke, the message to the agent it may publish (rebuilt, unattended), and the chats where
that message may be answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.errors import EventRefusedError, InvokeRefusedError
from harness.events import MESSAGE_RECEIVED, NETWORK_HANDLER, SUBAGENT_HANDLER
from harness.records.pairing import RedisAccessStore
from harness.runtime import Runtime
from harness.settings import DmPolicy, Settings
from harness.sidecar.environment import executor_environment
from harness.sidecar.faults import fault_of, host_exception
from harness.sidecar.invoke_policy import checked_invoke
from harness.sidecar.publish_policy import checked_event
from harness.sidecar.served_chats import ServedChats

PAIRED_USER = "1111111"
PAIRED_GROUP = "-100200"
LISTED = "3333333"
STRANGER = "6666666"


def _message(channel: str, chat_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": MESSAGE_RECEIVED,
        "data": {
            "message": "the nightly build failed",
            "session_key": "system-nightly",
            "channel": channel,
            "sender": {"id": "system", "name": "nightly"},
            "destination": {"chat_id": chat_id},
            **extra,
        },
    }


def _served(runtime: Runtime, policy: DmPolicy = "pairing") -> ServedChats:
    store = RedisAccessStore(runtime)
    store.grant(f"telegram:user:{PAIRED_USER}", "Alice", "test")
    store.grant(f"telegram:chat:{PAIRED_GROUP}", "Wonderland", "test")
    return ServedChats(runtime, policy, {"telegram": frozenset({LISTED})})


def test_checked_event_rebuilds_a_message_without_what_would_make_it_attended(
    runtime: Runtime,
) -> None:
    # Given a function's message that claims a person can answer approvals, names Alice as
    # its sender and carries a platform file to fetch
    access = {"subjects": [f"telegram:user:{PAIRED_USER}"], "pairing_subject": "x"}
    event = _message(
        "telegram",
        PAIRED_USER,
        channel_meta={"approvals": True, "access": access},
        attachments=[{"kind": "document", "ref": "F1"}],
    )
    # When the executor checks it
    checked = checked_event(event, _served(runtime))
    # Then what it publishes has the plain fields only: no channel_meta, no attachments
    data = checked["data"]
    assert set(data) == {"message", "session_key", "channel", "sender", "destination"}, data
    assert data["destination"]["chat_id"] == PAIRED_USER
    assert checked["name"] == MESSAGE_RECEIVED


@pytest.mark.parametrize(
    ("channel", "chat_id"),
    [("telegram", PAIRED_USER), ("telegram", PAIRED_GROUP), ("telegram", LISTED)],
    ids=["paired-person", "paired-group", "allowlisted"],
)
def test_checked_event_lets_a_message_be_answered_in_a_served_chat(
    runtime: Runtime, channel: str, chat_id: str
) -> None:
    # Given DM_POLICY=pairing / When a function's message names a served chat
    # Then it is published
    assert checked_event(_message(channel, chat_id), _served(runtime))["data"]["channel"]


@pytest.mark.parametrize(
    ("policy", "channel", "chat_id"),
    [
        ("pairing", "telegram", STRANGER),
        ("pairing", "slack", PAIRED_USER),
        ("pairing", "cli", "cli-1234"),
        ("allowlist", "telegram", PAIRED_USER),
    ],
    ids=["stranger", "other-channel", "owner-terminal", "paired-but-unlisted"],
)
def test_checked_event_refuses_a_message_to_a_chat_the_fleet_does_not_serve(
    runtime: Runtime, policy: DmPolicy, channel: str, chat_id: str
) -> None:
    # Given the chats served under `policy` / When a function's message names another chat
    # Then it is refused, saying which chats it may use
    with pytest.raises(EventRefusedError, match="only in a chat the fleet serves"):
        checked_event(_message(channel, chat_id), _served(runtime, policy))


def test_checked_event_lets_the_system_channel_and_an_open_fleet_take_any_chat(
    runtime: Runtime,
) -> None:
    # Given a message on the channel that delivers nowhere, and a fleet with DM_POLICY=open
    # When checked, Then both are published
    assert checked_event(_message("system", STRANGER), _served(runtime))
    assert checked_event(_message("telegram", STRANGER), _served(runtime, "open"))


def test_checked_event_refuses_a_malformed_message_with_a_clear_reason(runtime: Runtime) -> None:
    # Given a system message without a destination
    event = _message("telegram", PAIRED_USER)
    del event["data"]["destination"]
    # When checked, Then it is refused naming the missing field
    with pytest.raises(EventRefusedError, match="destination"):
        checked_event(event, _served(runtime))


def test_checked_event_passes_the_functions_own_events_unchanged(runtime: Runtime) -> None:
    event = {"name": "shop/order.placed", "data": {"channel_meta": {"x": 1}}}
    assert checked_event(event, _served(runtime)) == event


def test_checked_invoke_allows_the_sidecars_own_functions_as_asked() -> None:
    # Given the functions this executor loaded from functions/
    own = frozenset({"cleanup", "report"})
    # When a function invokes one of them, Then it may, with its data as given
    assert checked_invoke("report", {"x": 1, "reply": "anything"}, own) == {
        "x": 1,
        "reply": "anything",
    }
    # When it invokes the agent's handler, a channel's function or a built-in
    for fleet in ("agent-handle-message", "send-reply", "sidecar-failures"):
        # Then it is refused, and the refusal crosses to the host as its own class
        with pytest.raises(InvokeRefusedError, match="may invoke only") as caught:
            checked_invoke(fleet, {}, own)
        assert isinstance(host_exception(fault_of(caught.value)), InvokeRefusedError)


def test_checked_invoke_allows_an_agent_run_with_its_task_agent_and_schema_only() -> None:
    # Given an agent run as `harness.agent.api.run_agent` asks for one
    data = {"task": "sum up", "agent": "reporter", "output_schema": {"type": "object"}}
    # When checked, Then it is invoked with those fields
    assert checked_invoke(SUBAGENT_HANDLER, data, frozenset()) == data
    # and a network run with its network, task and state
    network = {"network": "nightly", "task": "t", "state": {"n": 1}}
    assert checked_invoke(NETWORK_HANDLER, network, frozenset()) == network


@pytest.mark.parametrize(
    "extra",
    [
        {"reply": {"channel": "telegram", "destination": {"chat_id": PAIRED_USER}}},
        {"ask_in": {"channel": "telegram", "destination": {"chat_id": PAIRED_USER}}},
        {"parent_session": f"telegram:{PAIRED_USER}"},
        {"network_state": {"network": "n", "data": {"approved": True}}},
        {"background": True},
    ],
    ids=["reply", "ask_in", "parent_session", "network_state", "background"],
)
def test_checked_invoke_refuses_an_agent_run_that_would_reach_a_person_or_a_run(
    extra: dict[str, Any],
) -> None:
    # Given an agent run that also names a chat, a person to ask, a session or a state
    data = {"task": "sum up", "agent": "reporter", **extra}
    # When checked, Then it is refused naming the field: the run must stay unattended
    with pytest.raises(InvokeRefusedError, match=next(iter(extra))):
        checked_invoke(SUBAGENT_HANDLER, data, frozenset())


def test_checked_invoke_refuses_an_invalid_agent_run() -> None:
    with pytest.raises(InvokeRefusedError, match="agent"):
        checked_invoke(SUBAGENT_HANDLER, {"task": "t", "agent": "x" * 100}, frozenset())


def test_executor_environment_carries_the_dm_policy_and_the_allowlists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a project whose .env names allowlists and DM_POLICY (the executor reads no .env)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text(
        "TELEGRAM_ALLOWED_CHATS=42, 43\nSLACK_ALLOWED_CHANNELS=C1\nDM_POLICY=allowlist\n"
    )
    settings = Settings(agent_workspace=tmp_path / "workspace")
    # When the supervisor builds the executor's environment
    env = executor_environment(settings, "redis://localhost:6379/0", {})
    # Then the executor can tell the chats the fleet serves
    assert env["DM_POLICY"] == "allowlist"
    assert env["TELEGRAM_ALLOWED_CHATS"] == "42,43"
    assert env["SLACK_ALLOWED_CHANNELS"] == "C1"
