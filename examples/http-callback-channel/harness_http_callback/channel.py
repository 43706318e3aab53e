"""The channel: signed JSON webhooks in, signed JSON callbacks out.

A message in (`POST /webhooks/http-callback`, signed, see `signature`):

    {"id": "m-1", "chat": "room-7", "sender": {"id": "u-1", "name": "Ann"}, "text": "hello"}

`id` is the sender's id for the message (1-100 of A-Za-z0-9_.:-); a message sent again with
the same id is the same event, so retrying a webhook is harmless. A reply out, POSTed to
HTTP_CALLBACK_URL and signed with the same secret:

    {"chat": "room-7", "reply_to": "m-1", "text": "Hi Ann!", "reply_key": "..."}

The callback answers 2xx (optionally `{"id": ...}`, the reply's id on its side); a 5xx or a
network error is retried by the fleet, a 4xx is not. The sender is described to the fleet's
DM_POLICY gate like any chat platform's (`http-callback:user:<id>`, `http-callback:chat:<id>`),
so strangers get a pairing code, not the agent.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

import httpx2

from channels.base import ChunkSent, Ignored, Inbound, Publish
from channels.errors import (
    ChannelNotConfiguredError,
    PermanentPlatformError,
    PlatformUnavailable,
)
from harness.events import MESSAGE_RECEIVED, Destination, Event, MessageReceived, Sender
from harness.settings_errors import read_settings
from harness_http_callback.settings import HttpCallbackSettings
from harness_http_callback.signature import check, sign

CHANNEL = "http-callback"
_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")


class HttpCallbackChannel:
    """The `channels.base.Channel` of a program speaking plain HTTP. Thread-safe."""

    def __init__(
        self,
        settings: HttpCallbackSettings,
        *,
        transport: httpx2.BaseTransport | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        if settings.http_callback_secret is None:
            raise ChannelNotConfiguredError("HTTP_CALLBACK_SECRET is not set")
        if not settings.http_callback_url:
            raise ChannelNotConfiguredError("HTTP_CALLBACK_URL is not set")
        self.settings = settings
        self._secret = settings.http_callback_secret.get_secret_value()
        self._url = settings.http_callback_url
        self._now = now
        self._client = httpx2.Client(timeout=settings.http_callback_timeout, transport=transport)

    @property
    def name(self) -> str:
        """`http-callback`."""
        return CHANNEL

    def verify(self, headers: Mapping[str, str], body: bytes) -> None:
        """Refuse (401) a webhook not signed with HTTP_CALLBACK_SECRET in the last 5 minutes."""
        check(headers, body, self._secret, now=self._now)

    def transform(self, payload: Mapping[str, Any], headers: Mapping[str, str]) -> Inbound:
        """A well-formed message becomes `agent.message.received`; anything else is ignored
        with the reason. Never raises."""
        message_id, chat, text = payload.get("id"), payload.get("chat"), payload.get("text")
        sender = payload.get("sender")
        if not (isinstance(message_id, str) and _ID.match(message_id)):
            return Ignored("no valid id")
        if not (isinstance(chat, str) and _ID.match(chat)):
            return Ignored("no valid chat")
        if not isinstance(sender, Mapping) or not isinstance(sender.get("id"), str):
            return Ignored("no sender id")
        if not isinstance(text, str) or not text.strip():
            return Ignored("empty message")
        sender_id, name = str(sender["id"]), str(sender.get("name") or "")
        data = MessageReceived(
            message=text.strip(),
            session_key=f"{CHANNEL}-{chat}",
            channel=CHANNEL,
            sender=Sender(id=sender_id, name=name),
            destination=Destination(chat_id=chat, message_id=message_id),
            channel_meta={"access": self._access(chat, sender_id, name)},
        )
        event_id = f"{CHANNEL}-{chat}-{message_id}"
        return Publish(Event(name=MESSAGE_RECEIVED, id=event_id, data=data.model_dump(mode="json")))

    def send_reply(
        self,
        response: str,
        destination: Destination,
        channel_meta: Mapping[str, Any],
        reply_key: str,
        *,
        skip_chunks: Collection[int] = (),
        on_chunk_sent: ChunkSent | None = None,
    ) -> list[str]:
        """POST the whole reply as one chunk (index 0) to HTTP_CALLBACK_URL, signed. Raises
        `PlatformUnavailable` on a network error or a 5xx, `PermanentPlatformError` on a
        4xx."""
        if not response.strip() or 0 in skip_chunks:
            return []
        reply = {
            "chat": destination.chat_id,
            "reply_to": destination.message_id,
            "text": response,
            "reply_key": reply_key,
        }
        posted = self._post(reply)
        if on_chunk_sent is not None:
            on_chunk_sent(0, posted)
        return [posted]

    def acknowledge(self, destination: Destination, channel_meta: Mapping[str, Any]) -> None:
        """Nothing to show: the caller sees the reply when it comes."""

    def complete(self, destination: Destination, channel_meta: Mapping[str, Any]) -> None:
        """Nothing to undo."""

    def setup(self) -> str:
        """Nothing to register: say where messages go in and replies come out."""
        return (
            f"{CHANNEL}: POST signed messages to <PUBLIC_URL>/webhooks/{CHANNEL}; "
            f"replies are POSTed to {self._url}"
        )

    def _access(self, chat: str, sender_id: str, name: str) -> dict[str, Any]:
        user = f"{CHANNEL}:user:{sender_id}"
        return {
            "subjects": [user, f"{CHANNEL}:chat:{chat}"],
            "pairing_subject": user,
            "label": name or sender_id,
            "allowlisted": chat in self.settings.http_callback_allowed_chats,
        }

    def _post(self, reply: dict[str, Any]) -> str:
        body = json.dumps(reply).encode()
        headers = {"Content-Type": "application/json", **sign(body, self._secret, int(self._now()))}
        try:
            answer = self._client.post(self._url, content=body, headers=headers)
        except httpx2.HTTPError as exc:
            raise PlatformUnavailable(CHANNEL, "callback", type(exc).__name__) from None
        if answer.status_code >= 500:
            raise PlatformUnavailable(CHANNEL, "callback", f"HTTP {answer.status_code}")
        if answer.status_code >= 400:
            raise PermanentPlatformError(CHANNEL, "callback", f"HTTP {answer.status_code}")
        try:
            given = answer.json().get("id")
        except (ValueError, AttributeError):
            given = None
        return str(given) if given else str(reply["reply_key"])


def create_channel() -> HttpCallbackChannel:
    """The channel from the environment. Raises `ChannelNotConfiguredError` without
    HTTP_CALLBACK_SECRET or HTTP_CALLBACK_URL, `ConfigurationError` for an invalid setting."""
    return HttpCallbackChannel(read_settings(HttpCallbackSettings))
