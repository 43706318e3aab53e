"""A small Telegram Bot API client: the only module that talks to Telegram.

Every call is `POST <base>/bot<token>/<method>` with a JSON body. Failures become
`channels.errors` exceptions here. The token is part of the URL path, so it is redacted from
every error message, and from httpx2's request log through a logging filter.

A worker calls from many threads at once (the acknowledgement keeper's senders, one draft
writer per streamed turn, deliveries), several calls a turn: one client keeps enough
connections alive for such a burst (`POOL_CONNECTIONS`) so that calls do not open new ones,
each method's URL is parsed once, and httpx2's "HTTP Request" line per call is left out of
the log below DEBUG (a failed call is logged by its caller as a `PlatformError`).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping
from typing import Any

import httpx2

from channels.errors import (
    AuthenticationError,
    DestinationError,
    FileTooLarge,
    MessageFormatError,
    MessageRejected,
    PermanentPlatformError,
    PlatformError,
    PlatformUnavailable,
    RateLimited,
)
from channels.media.fetch import fetch_bounded
from channels.telegram.settings import DEFAULT_BASE_URL

_TOKEN_IN_PATH = re.compile(r"/bot[^/\s]+/")
_BOT_API_URL = re.compile(r"/bot\d+:[^/\s]+/")
"""A Bot API request's path (`/bot<id>:<secret>/`), as opposed to any URL with "/bot" in it."""
_PLATFORM = "telegram"
log = logging.getLogger(__name__)

POOL_CONNECTIONS = 100
"""Connections one client keeps open to the Bot API, idle ones included. httpx2 keeps 20 idle
by default: a burst from more threads than that (a wave of turns, each with its draft writer)
closed the extra ones after each call and opened new ones for the next (TCP, and TLS to
api.telegram.org)."""
KEEP_ALIVE_S = 30.0
"""How long an idle connection is kept: longer than the gaps between a live turn's calls
(typing every few seconds, a draft each second)."""


def redact(text: str, token: str | None = None) -> str:
    """`text` with a bot token, and any `/bot<token>/` URL segment, replaced by a placeholder."""
    if token:
        text = text.replace(token, "<token>")
    return _TOKEN_IN_PATH.sub("/bot<token>/", text)


class _RedactTokenFilter(logging.Filter):
    """Rewrites httpx2's "HTTP Request: POST <url>" records so the token never reaches a log,
    and drops those below WARNING unless this module logs at DEBUG: one line per Bot API call,
    several per turn, that the log's reader does not need."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any("/bot" in str(a) for a in record.args):
            quiet = record.levelno < logging.WARNING and not log.isEnabledFor(logging.DEBUG)
            if quiet and any(_BOT_API_URL.search(str(a)) for a in record.args):
                return False
            record.args = tuple(redact(str(a)) if "/bot" in str(a) else a for a in record.args)
        return True


_FILTER = _RedactTokenFilter()
logging.getLogger("httpx2").addFilter(_FILTER)  # idempotent: a filter is added once


class TelegramApi:
    """Calls to one bot's Bot API. Thread-safe; `close()` releases the connection pool.

    A 429 whose `retry_after` is at most `max_rate_limit_wait` seconds is retried once after
    waiting (nothing was sent); longer waits raise `RateLimited` for the caller to schedule.
    """

    def __init__(
        self,
        token: str,
        base_url: str = DEFAULT_BASE_URL,
        *,
        timeout: float = 10.0,
        fast_timeout: float = 5.0,
        max_rate_limit_wait: float = 5.0,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self._token = token
        self._file_base = f"{base_url.rstrip('/')}/file/bot{token}/"
        self._timeout = timeout
        self.fast_timeout = fast_timeout
        self._max_rate_limit_wait = max_rate_limit_wait
        self._base = f"{base_url.rstrip('/')}/bot{token}/"
        self._urls: dict[str, httpx2.URL] = {}
        limits = httpx2.Limits(
            max_connections=POOL_CONNECTIONS,
            max_keepalive_connections=POOL_CONNECTIONS,
            keepalive_expiry=KEEP_ALIVE_S,
        )
        self._client = httpx2.Client(timeout=timeout, transport=transport, limits=limits)

    @property
    def bot_id(self) -> str:
        """The bot's numeric id: the part of the token before the colon."""
        return self._token.split(":", 1)[0]

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def call(self, method: str, params: Mapping[str, Any], *, timeout: float | None = None) -> Any:
        """Call `method` with `params` (None values dropped); return the response's `result`.
        Raises a `PlatformError` subclass."""
        return self._request(method, params, timeout).get("result")

    def _request(
        self, method: str, params: Mapping[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        body = {key: value for key, value in params.items() if value is not None}
        for attempt in (1, 2):
            try:
                return self._post(method, body, timeout)
            except RateLimited as exc:
                if attempt == 2 or exc.retry_after > self._max_rate_limit_wait:
                    raise
                log.warning("telegram %s rate limited; retrying in %s s", method, exc.retry_after)
                time.sleep(exc.retry_after)
        raise AssertionError("unreachable")

    def _post(
        self,
        method: str,
        body: Mapping[str, Any],
        timeout: float | None,
        files: Mapping[str, tuple[str, bytes, str]] | None = None,
    ) -> dict[str, Any]:
        url, limit = self._url(method), timeout or self._timeout
        try:
            if files:  # multipart: objects travel as JSON strings, like the Bot API expects
                form = {k: v if isinstance(v, str) else _json(v) for k, v in body.items()}
                response = self._client.post(url, data=form, files=files, timeout=limit)
            else:
                response = self._client.post(url, json=body, timeout=limit)
        except httpx2.TimeoutException:
            raise PlatformUnavailable(_PLATFORM, method, "request timed out") from None
        except httpx2.HTTPError as exc:
            detail = redact(f"{type(exc).__name__}: {exc}", self._token)
            raise PlatformUnavailable(_PLATFORM, method, detail) from None
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if isinstance(payload, dict) and payload.get("ok") is True:
            return payload
        raise _error(method, response.status_code, payload, self._token)

    def _url(self, method: str) -> httpx2.URL:
        """`method`'s URL, parsed once (httpx2 parses a URL string on every request)."""
        url = self._urls.get(method)
        if url is None:  # a race makes the same URL twice: harmless
            url = self._urls[method] = httpx2.URL(self._base + method)
        return url

    def get_me(self) -> dict[str, Any]:
        """The bot's own User object."""
        return dict(self.call("getMe", {}, timeout=self.fast_timeout))

    def send_message(
        self,
        chat_id: str,
        text: str,
        *,
        parse_mode: str | None = None,
        reply_to_message_id: str | None = None,
        message_thread_id: str | None = None,
    ) -> dict[str, Any]:
        """Post `text`; return the sent Message. A reply target that no longer exists does not
        fail the send (`allow_sending_without_reply`)."""
        reply = None
        if reply_to_message_id is not None:
            reply = {"message_id": int(reply_to_message_id), "allow_sending_without_reply": True}
        params = {
            "chat_id": chat_id,
            "text": text,
            "parse_mode": parse_mode,
            "reply_parameters": reply,
            "message_thread_id": int(message_thread_id) if message_thread_id else None,
            "link_preview_options": {"is_disabled": True},
        }
        return dict(self.call("sendMessage", params))

    def send_message_draft(
        self,
        chat_id: str,
        draft_id: int,
        text: str,
        *,
        parse_mode: str | None = None,
        message_thread_id: str | None = None,
    ) -> None:
        """Show `text` as an ephemeral preview of a message being written (`sendMessageDraft`,
        Bot API 9.3+, private chats only). Previews with the same non-zero `draft_id` replace
        each other, animated; one fades after about 30 seconds, and the final message must
        still be sent with `send_message`."""
        params = {
            "chat_id": chat_id,
            "draft_id": draft_id,
            "text": text,
            "parse_mode": parse_mode,
            "message_thread_id": int(message_thread_id) if message_thread_id else None,
        }
        self.call("sendMessageDraft", params)

    def send_keyboard(
        self,
        chat_id: str,
        text: str,
        keyboard: Mapping[str, Any],
        *,
        reply_to_message_id: str | None = None,
        message_thread_id: str | None = None,
    ) -> dict[str, Any]:
        """Post plain `text` with an inline keyboard (`reply_markup`); return the Message."""
        reply = None
        if reply_to_message_id is not None:
            reply = {"message_id": int(reply_to_message_id), "allow_sending_without_reply": True}
        params = {
            "chat_id": chat_id,
            "text": text,
            "reply_parameters": reply,
            "message_thread_id": int(message_thread_id) if message_thread_id else None,
            "reply_markup": keyboard,
        }
        return dict(self.call("sendMessage", params))

    def answer_callback_query(self, callback_query_id: str, text: str) -> None:
        """Stop the button's spinner and show `text` to the person who pressed it."""
        params = {"callback_query_id": callback_query_id, "text": text[:200]}
        self.call("answerCallbackQuery", params, timeout=self.fast_timeout)

    def edit_message_text(
        self,
        chat_id: str,
        message_id: str,
        text: str,
        *,
        parse_mode: str | None = None,
        reply_markup: Mapping[str, Any] | None = None,
    ) -> None:
        """Replace the text of a message the bot sent; without `reply_markup` its keyboard goes
        away. Editing to the text it already has is not an error here (Telegram answers
        "message is not modified")."""
        params = {
            "chat_id": chat_id,
            "message_id": int(message_id),
            "text": text,
            "parse_mode": parse_mode,
            "link_preview_options": {"is_disabled": True},
            "reply_markup": reply_markup,
        }
        try:
            self.call("editMessageText", params)
        except PermanentPlatformError as exc:
            if "message is not modified" not in exc.description.lower():
                raise

    def send_chat_action(
        self, chat_id: str, action: str = "typing", *, message_thread_id: str | None = None
    ) -> None:
        """Show `action` (e.g. "typing") in the chat for about five seconds."""
        thread = int(message_thread_id) if message_thread_id else None
        params = {"chat_id": chat_id, "action": action, "message_thread_id": thread}
        self.call("sendChatAction", params, timeout=self.fast_timeout)

    def set_message_reaction(self, chat_id: str, message_id: str, emoji: str | None) -> None:
        """Set the bot's reaction on a message to `emoji` (one of Telegram's list), or clear it
        with None."""
        reaction = [{"type": "emoji", "emoji": emoji}] if emoji else []
        params = {"chat_id": chat_id, "message_id": int(message_id), "reaction": reaction}
        self.call("setMessageReaction", params, timeout=self.fast_timeout)

    def set_webhook(self, url: str, *, secret_token: str, allowed_updates: list[str]) -> str:
        """Point the bot's updates at `url`; return Telegram's description ("Webhook was set")."""
        params = {"url": url, "secret_token": secret_token, "allowed_updates": allowed_updates}
        return self._described("setWebhook", params)

    def set_my_commands(self, commands: Mapping[str, str]) -> None:
        """Make `commands` (name -> description) the bot's command menu for every chat
        (the default scope). Idempotent."""
        listed = [{"command": name, "description": what} for name, what in commands.items()]
        self.call("setMyCommands", {"commands": listed})

    def delete_webhook(self, *, drop_pending_updates: bool = False) -> str:
        """Remove the webhook so `get_updates` works; return Telegram's description."""
        return self._described("deleteWebhook", {"drop_pending_updates": drop_pending_updates})

    def get_updates(
        self,
        *,
        offset: int | None = None,
        timeout: int = 0,
        allowed_updates: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Long-poll for updates from `offset` for up to `timeout` seconds. Raises a
        `PermanentPlatformError` (409) while a webhook is set."""
        params = {"offset": offset, "timeout": timeout, "allowed_updates": allowed_updates}
        result = self.call("getUpdates", params, timeout=self._timeout + timeout)
        return [dict(update) for update in result or []]

    def get_file_path(self, file_id: str) -> str:
        """Where to download a file from (`getFile`'s `file_path`). Raises `FileTooLarge` for
        files over the 20 MB bots may fetch."""
        try:
            result = self.call("getFile", {"file_id": file_id})
        except PermanentPlatformError as exc:
            if "too big" in exc.description.lower():
                raise FileTooLarge(_PLATFORM, "getFile", exc.description) from None
            raise
        return str((result or {}).get("file_path") or "")

    def download(self, file_path: str, max_bytes: int) -> tuple[bytes, str]:
        """The bytes and content type at a `file_path`, refusing (`FileTooLarge`) past
        `max_bytes`. Raises `PlatformUnavailable` on network and server errors."""
        url = self._file_base + file_path
        return fetch_bounded(self._client, url, {}, max_bytes, _PLATFORM, self._token)

    def send_file(
        self,
        method: str,
        field: str,
        chat_id: str,
        upload: tuple[str, bytes, str],
        *,
        caption: str = "",
        message_thread_id: str | None = None,
    ) -> dict[str, Any]:
        """`sendPhoto` / `sendDocument` as multipart (the file under `field`); the sent
        Message. Not retried after a rate limit wait beyond one, like every call."""
        params = {
            "chat_id": chat_id,
            "caption": caption or None,
            "message_thread_id": int(message_thread_id) if message_thread_id else None,
        }
        body = {key: value for key, value in params.items() if value is not None}
        return dict(self._post(method, body, 60.0, files={field: upload}).get("result") or {})

    def _described(self, method: str, params: Mapping[str, Any]) -> str:
        payload = self._request(method, params)
        return str(payload.get("description") or payload.get("result"))


def _json(value: Any) -> str:
    return json.dumps(value)


def _error(method: str, status: int, payload: object, token: str) -> PlatformError:
    """Our exception for a failed Bot API answer."""
    body = payload if isinstance(payload, dict) else {}
    code = int(body.get("error_code") or status)
    description = redact(str(body.get("description") or f"HTTP {status}"), token)
    lowered = description.lower()
    if code == 429:
        parameters = body.get("parameters") or {}
        retry_after = float(parameters.get("retry_after", 1))
        return RateLimited(_PLATFORM, method, description, retry_after)
    if code >= 500 or not isinstance(payload, dict):
        return PlatformUnavailable(_PLATFORM, method, description)
    if "can't parse entities" in lowered:
        return MessageFormatError(_PLATFORM, method, description)
    if code in (401, 404):
        return AuthenticationError(_PLATFORM, method, description)
    if code == 403 or "chat not found" in lowered or "thread not found" in lowered:
        return DestinationError(_PLATFORM, method, description)
    if "message is too long" in lowered or "text is empty" in lowered:
        return MessageRejected(_PLATFORM, method, description)
    return PermanentPlatformError(_PLATFORM, method, description)
