"""The HTTP-callback channel: signatures checked, messages transformed, replies delivered; and
the fleet picking it up through its `harness.channels` entry point, with no edit to Harness."""

from __future__ import annotations

import json
import time

import pytest
from conftest import SECRET, CallbackServer
from fastapi.testclient import TestClient
from harness_http_callback import CHANNEL, HttpCallbackChannel, create_channel
from harness_http_callback.settings import HttpCallbackSettings
from harness_http_callback.signature import check, sign
from typer.testing import CliRunner

from channels import registry as channel_registry
from channels.base import Ignored, Publish
from channels.errors import (
    ChannelNotConfiguredError,
    PermanentPlatformError,
    PlatformUnavailable,
    WebhookRejected,
)
from harness.cli import app
from harness.commands.doctor_remote import channel_checks
from harness.composition import plug_in_channels
from harness.events import REPLY_READY, Destination, Event, MessageReceived, ReplyReady
from harness.runtime import Runtime, get_runtime, publish
from harness.runtime.testing import drain
from harness.settings import Settings
from harness.web.app import create_app, default_routers

MESSAGE = {"id": "m-1", "chat": "room-7", "sender": {"id": "u-1", "name": "Ann"}, "text": "hi"}


def signed(payload: object, secret: str = SECRET, at: float | None = None) -> tuple[bytes, dict]:
    """The body and headers of a webhook request as the other program sends it."""
    body = json.dumps(payload).encode()
    return body, sign(body, secret, int(time.time() if at is None else at))


def channel_for(callback: CallbackServer) -> HttpCallbackChannel:
    """The channel pointing at `callback`, built from settings without the environment."""
    settings = HttpCallbackSettings(http_callback_secret=SECRET, http_callback_url=callback.url)
    return HttpCallbackChannel(settings)


def test_verify_accepts_a_request_signed_with_the_secret(callback: CallbackServer) -> None:
    # Given a request signed with the shared secret
    body, headers = signed(MESSAGE)

    # When / Then the channel accepts it
    channel_for(callback).verify(headers, body)


@pytest.mark.parametrize(
    ("secret", "age", "reason"),
    [("another secret", 0, "does not match"), (SECRET, 3600, "stale")],
)
def test_verify_refuses_a_wrong_or_stale_signature(
    callback: CallbackServer, secret: str, age: int, reason: str
) -> None:
    # Given a request signed with another secret, or an hour ago
    body, headers = signed(MESSAGE, secret, time.time() - age)

    # When it is verified, Then it is refused with 401 and why
    with pytest.raises(WebhookRejected, match=reason) as refused:
        channel_for(callback).verify(headers, body)
    assert refused.value.status == 401


def test_verify_without_a_secret_refuses_everything() -> None:
    # Given no secret configured, When a request comes, Then it is refused
    body, headers = signed(MESSAGE)
    with pytest.raises(WebhookRejected, match="not set"):
        check(headers, body, None)


def test_transform_publishes_the_message_with_its_sender_described(
    callback: CallbackServer,
) -> None:
    # Given a well-formed message
    # When it is transformed
    inbound = channel_for(callback).transform(MESSAGE, {})

    # Then it is a message event, whose sender the DM_POLICY gate can judge
    assert isinstance(inbound, Publish)
    assert inbound.event.id == "http-callback-room-7-m-1"
    data = MessageReceived.model_validate(inbound.event.data)
    assert (data.channel, data.message, data.session_key) == (CHANNEL, "hi", "http-callback-room-7")
    assert data.channel_meta.asker is not None
    assert data.channel_meta.asker.pairing_subject == "http-callback:user:u-1"


def test_transform_ignores_a_message_without_an_id(callback: CallbackServer) -> None:
    # Given a message without its id, When transformed, Then it is ignored with the reason
    inbound = channel_for(callback).transform({**MESSAGE, "id": None}, {})
    assert inbound == Ignored("no valid id")


def test_send_reply_posts_signed_json_to_the_callback(callback: CallbackServer) -> None:
    # Given the channel and the program behind the callback URL
    channel = channel_for(callback)
    sent: list[tuple[int, str]] = []

    # When a reply is sent
    ids = channel.send_reply(
        "Hello **Ann**", Destination(chat_id="room-7", message_id="m-1"), {}, "reply-1",
        on_chunk_sent=lambda index, message_id: sent.append((index, message_id)),
    )  # fmt: skip

    # Then one signed POST carried it, and its id was recorded as chunk 0
    assert ids == ["r-1"] and sent == [(0, "r-1")]
    (request,) = callback.received
    check(request.headers, request.body, SECRET)
    assert request.json() == {
        "chat": "room-7", "reply_to": "m-1", "text": "Hello **Ann**", "reply_key": "reply-1"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("status", "error"), [(503, PlatformUnavailable), (404, PermanentPlatformError)]
)
def test_send_reply_failure_says_whether_to_retry(
    callback: CallbackServer, status: int, error: type[Exception]
) -> None:
    # Given a callback answering an error
    callback.status = status

    # When a reply is sent, Then the error says whether trying again can help
    with pytest.raises(error):
        channel_for(callback).send_reply("hi", Destination(chat_id="room-7"), {}, "reply-1")


def test_fleet_serves_the_channel_webhook_through_its_entry_point(
    configured: CallbackServer, runtime: Runtime
) -> None:
    # Given this package installed and the web app built the way `harness web` builds it
    loaded = plug_in_channels()
    client = TestClient(create_app(get_runtime, Settings(), routers=default_routers()))
    body, headers = signed(MESSAGE)

    # When the other program posts a signed message to the channel's webhook route
    answer = client.post(f"/webhooks/{CHANNEL}", content=body, headers=headers)

    # Then the fleet knows the channel by its entry point, and published the message
    assert CHANNEL in loaded
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"ok": True, "event_id": "http-callback-room-7-m-1", "duplicate": False}


def test_fleet_refuses_an_unsigned_webhook(configured: CallbackServer, runtime: Runtime) -> None:
    # Given the app with the channel plugged in
    plug_in_channels()
    client = TestClient(create_app(get_runtime, Settings(), routers=default_routers()))

    # When a request without a signature comes, Then it is refused before anything is published
    answer = client.post(f"/webhooks/{CHANNEL}", json=MESSAGE)
    assert answer.status_code == 401


def test_fleet_delivers_a_reply_to_the_callback_through_the_bus(
    configured: CallbackServer, runtime: Runtime
) -> None:
    # Given the channel plugged in as a worker plugs it in
    plug_in_channels()
    assert isinstance(channel_registry.get_channel(CHANNEL), HttpCallbackChannel)

    # When the agent's reply for this channel is published and the worker runs
    reply = ReplyReady(
        response="Hello Ann", channel=CHANNEL, run_id="run-1",
        destination=Destination(chat_id="room-7", message_id="m-1"),
    )  # fmt: skip
    publish(Event(name=REPLY_READY, data=reply.model_dump(mode="json")), runtime=runtime)
    drain(runtime)

    # Then `send-reply` posted it, signed, to the callback, once
    (request,) = configured.received
    check(request.headers, request.body, SECRET)
    assert request.json()["text"] == "Hello Ann"
    assert request.json()["chat"] == "room-7"


def test_create_channel_without_settings_is_not_configured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    # Given no HTTP_CALLBACK_* settings
    monkeypatch.chdir(str(tmp_path))
    monkeypatch.delenv("HTTP_CALLBACK_SECRET", raising=False)

    # When the fleet asks for the channel, Then it is a clear configuration error
    with pytest.raises(ChannelNotConfiguredError, match="HTTP_CALLBACK_SECRET"):
        create_channel()


def test_doctor_checks_the_channel_through_its_plugin(configured: CallbackServer) -> None:
    # Given the channel's settings, and the fleet's plug-ins loaded from the entry points
    # When `harness doctor` gathers the channels' checks
    checks = channel_checks(offline=True)

    # Then the channel's own check is among them, naming where replies go and not the secret
    (mine,) = [c for c in checks if c.name == CHANNEL]
    assert mine.status == "ok", mine
    assert "127.0.0.1" in mine.detail and SECRET not in mine.detail


def test_doctor_names_the_missing_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    # Given a secret but no callback URL
    monkeypatch.chdir(str(tmp_path))
    monkeypatch.setenv("HTTP_CALLBACK_SECRET", SECRET)
    monkeypatch.delenv("HTTP_CALLBACK_URL", raising=False)

    # When `harness doctor` gathers the channels' checks
    (mine,) = [c for c in channel_checks(offline=True) if c.name == CHANNEL]

    # Then the channel's check fails naming the variable
    assert mine.status == "fail" and "HTTP_CALLBACK_URL" in mine.detail, mine


def test_setup_before_the_settings_exist_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    # Given no HTTP_CALLBACK_* settings
    monkeypatch.chdir(str(tmp_path))
    monkeypatch.delenv("HTTP_CALLBACK_SECRET", raising=False)
    monkeypatch.delenv("HTTP_CALLBACK_URL", raising=False)
    channel_registry.reset()

    # When `harness setup http-callback` runs
    result = CliRunner().invoke(app, ["setup", CHANNEL])

    # Then it prints the plug-in's report of what to set
    assert result.exit_code == 0, result.output
    assert "HTTP_CALLBACK_SECRET and HTTP_CALLBACK_URL" in result.output
