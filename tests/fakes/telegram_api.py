"""A fake Telegram Bot API: a real HTTP server on 127.0.0.1 speaking the Bot API wire format.

`POST /bot<token>/<method>` with a JSON, form or query-string body answers
`{"ok": true, "result": ...}` or `{"ok": false, "error_code": ..., "description": ...}`.
It validates what the real API validates and our code could get wrong: HTML parse mode (only
Telegram's tags, balanced, a raw `<` refused as "can't parse entities"), the 4,096 UTF-16
length after parsing, empty text, reaction emoji, webhook URL and secret, and the getUpdates /
webhook conflict. `editMessageText` changes a sent message in place, refuses an unchanged
text ("message is not modified") and enforces an edit rate limit per chat (an edit
`edit_every` seconds after the chat's last message or edit at the soonest, else 429 with
`retry_after`). `sendMessageDraft` shows an ephemeral preview in a private chat (a non-zero
`draft_id`, 1-4,096 characters), kept per (chat, draft) until a message is sent to the chat;
with `drafts_supported` False it answers 404 like a Bot API server that predates it. Every
call is recorded; `fail_next` scripts failures and `fail_at_random` makes a share of calls
fail. With `keep_alive` it speaks HTTP/1.1 and keeps connections open between calls like
api.telegram.org (the benchmarks use it; tests default to a connection per call, so that a
client a test does not close leaves no socket behind); `connections` counts those accepted.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import time
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from tests.fakes._http import Failure, FakeHttpServer, read_params

DEFAULT_TOKEN = "123456789:AAFakeTokenForTests_abcdefghijklmno"
ALLOWED_TAGS = frozenset(
    "b strong i em u ins s strike del a code pre tg-spoiler span blockquote tg-emoji".split()
)
REACTION_EMOJI = frozenset(  # a subset of Telegram's list; note ✅ is not on it
    "👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 👀 🤝 ✍ 🤗 🫡".split()
)
CHAT_ACTIONS = frozenset(
    "typing upload_photo record_video upload_video record_voice upload_voice upload_document "
    "choose_sticker find_location record_video_note upload_video_note".split()
)
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)((?:\s[^<>]*)?)>")
_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
_BAD_WEBHOOK = "Bad Request: bad webhook: "
_JSON_FIELDS = ("reply_parameters", "allowed_updates", "reaction", "link_preview_options")


class ApiError(Exception):
    """An error answer: HTTP status, description and optional retry_after."""

    def __init__(self, status: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.status, self.description, self.retry_after = status, description, retry_after


@dataclass(frozen=True)
class Call:
    """One recorded request."""

    method: str
    params: dict[str, Any]
    http_method: str = "POST"


def parse_html(text: str) -> str:
    """The visible text of Telegram-HTML `text`; raises `ApiError` as Telegram does."""
    out: list[str] = []
    stack: list[str] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        if char == "&":
            match = re.match(r"&(#\d+|#x[0-9a-fA-F]+|lt|gt|amp|quot);", text[pos:])
            out.append(html.unescape(match.group(0)) if match else "&")
            pos += len(match.group(0)) if match else 1
            continue
        if char != "<":
            out.append(char)
            pos += 1
            continue
        offset = len(text[:pos].encode())
        match = _TAG.match(text, pos)
        if match is None:
            raise _entities(f"Unsupported start tag at byte offset {offset}")
        closing, name = match.group(1) == "/", match.group(2).lower()
        if name not in ALLOWED_TAGS:
            raise _entities(f'Unsupported start tag "{name}" at byte offset {offset}')
        if not closing:
            stack.append(name)
        elif not stack:
            raise _entities(f"Unexpected end tag at byte offset {offset}")
        elif stack[-1] != name:
            raise _entities(
                f'Unmatched end tag at byte offset {offset}, expected "</{stack[-1]}>", '
                f'found "</{name}>"'
            )
        else:
            stack.pop()
        pos = match.end()
    if stack:
        raise _entities(f'Can\'t find end tag corresponding to start tag "{stack[-1]}"')
    return "".join(out)


def _entities(detail: str) -> ApiError:
    return ApiError(400, f"Bad Request: can't parse entities: {detail}")


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


@dataclass
class _State:
    messages: list[dict[str, Any]] = field(default_factory=list)
    sent_at: list[float] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    reactions: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    webhook: dict[str, Any] | None = None
    commands: list[dict[str, str]] | None = None
    next_message_id: int = 1000
    last_write: dict[str, float] = field(default_factory=dict)
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    sent_files: list[dict[str, Any]] = field(default_factory=list)
    callback_answers: list[dict[str, Any]] = field(default_factory=list)
    drafts: dict[tuple[str, int], str] = field(default_factory=dict)


_COMMAND = re.compile(r"[a-z0-9_]{1,32}")


class FakeTelegramApi(FakeHttpServer[Call]):
    """The fake server. Use as a context manager or call `start()` / `stop()`."""

    def __init__(
        self,
        token: str = DEFAULT_TOKEN,
        bot_username: str = "harness_test_bot",
        *,
        keep_alive: bool = False,
    ) -> None:
        super().__init__(keep_alive=keep_alive)
        self.token = token
        self.bot_username = bot_username
        self.edit_every = 1.0
        self.rate_limited = 0
        self.drafts_supported = True
        self._state = _State()

    # inspection and scripting -----------------------------------------------------------

    @property
    def base_url(self) -> str:
        """What to set TELEGRAM_API_BASE_URL to."""
        return self._origin

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Messages successfully sent, as the Message objects returned (plus `parse_mode`)."""
        with self._lock:
            return list(self._state.messages)

    @property
    def drafts(self) -> dict[tuple[str, int], str]:
        """Previews shown now (`sendMessageDraft`), (chat id, draft id) -> visible text; a
        chat's previews go when a message is sent to it."""
        with self._lock:
            return dict(self._state.drafts)

    @property
    def message_times(self) -> list[float]:
        """When each of `messages` was sent (`time.time()`), in the same order."""
        with self._lock:
            return list(self._state.sent_at)

    @property
    def webhook(self) -> dict[str, Any] | None:
        """The webhook set with setWebhook, or None."""
        with self._lock:
            return self._state.webhook

    @property
    def commands(self) -> list[dict[str, str]] | None:
        """The bot's command list set with setMyCommands (default scope), or None."""
        with self._lock:
            return self._state.commands

    @property
    def callback_answers(self) -> list[dict[str, Any]]:
        """answerCallbackQuery calls, in order: `callback_query_id` and `text`."""
        with self._lock:
            return list(self._state.callback_answers)

    def fail_next(
        self,
        count: int = 1,
        *,
        status: int = 429,
        description: str | None = None,
        retry_after: int | None = None,
        method: str | None = None,
    ) -> None:
        """Fail the next `count` calls (to `method`, or to any) with `status`. A 429 carries
        `parameters.retry_after` (default 1)."""
        if status == 429 and retry_after is None:
            retry_after = 1
        text = description or _STATUS_TEXT.get(status, f"Error {status}")
        self._queue_failures(count, Failure(status, text, retry_after, method))

    def fail_at_random(
        self,
        rate: float,
        *,
        status: int = 500,
        method: str | None = "sendMessage",
        retry_after: int | None = None,
        seed: int = 0,
    ) -> None:
        """Fail each later call to `method` (to any, when None) with probability `rate` and
        `status` (a 429 carries `retry_after`, default 1), until `recover()`. The call fails
        before it takes effect: a failed sendMessage posted nothing."""
        if status == 429 and retry_after is None:
            retry_after = 1
        text = _STATUS_TEXT.get(status, f"Error {status}")
        self._fail_at_random(rate, Failure(status, text, retry_after, method), seed)

    def push_update(self, update: dict[str, Any]) -> None:
        """Queue an update for getUpdates and wake a pending long poll."""
        with self._lock:
            self._state.updates.append(update)
            self._lock.notify_all()

    # request handling -------------------------------------------------------------------

    def add_file(self, file_id: str, content: bytes, file_path: str | None = None) -> None:
        """Make `file_id` fetchable: `getFile` answers its path, the file URL its bytes."""
        with self._lock:
            self._state.files[file_id] = (file_path or f"documents/{file_id}", content)

    @property
    def sent_files(self) -> list[dict[str, Any]]:
        """Files posted with sendPhoto / sendDocument: method, chat_id, name, content, caption."""
        with self._lock:
            return list(self._state.sent_files)

    def respond(self, request: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        """Answer one HTTP request to `/bot<token>/<method>`, or a file download at
        `/file/bot<token>/<file_path>`."""
        path = urlsplit(request.path).path
        if path.startswith("/file/bot"):
            return self._download(path)
        if "multipart/form-data" in (request.headers.get("Content-Type") or ""):
            status, body = self.handle(path, request.command, _parse_multipart(request))
            return status, {"Content-Type": "application/json"}, json.dumps(body).encode()
        try:
            params = _parse_body(request)
        except ValueError:
            status, body = 400, _error_body(ApiError(400, "Bad Request: invalid request body"))
        else:
            status, body = self.handle(urlsplit(request.path).path, request.command, params)
        headers = {"Content-Type": "application/json"}
        if status == 429 and "parameters" in body:
            headers["Retry-After"] = str(body["parameters"]["retry_after"])
        return status, headers, json.dumps(body).encode()

    def handle(self, path: str, http_method: str, params: dict[str, Any]) -> tuple[int, Any]:
        """Answer one request: (HTTP status, JSON body)."""
        match = re.fullmatch(r"/bot([^/]+)/([A-Za-z]+)", path)
        if match is None:
            return 404, _error_body(ApiError(404, "Not Found"))
        token, method = match.groups()
        failure = self._record(Call(method, params, http_method))
        try:
            if token != self.token:
                raise ApiError(401, "Unauthorized")
            if failure is not None:
                raise ApiError(failure.status, failure.message, failure.retry_after)
            handler = getattr(self, f"_m_{method}", None)
            if handler is None:
                raise ApiError(404, "Not Found: method not found")
            result, description = handler(params)
        except ApiError as exc:
            return exc.status, _error_body(exc)
        body = {"ok": True, "result": result}
        if description:
            body["description"] = description
        return 200, body

    def _download(self, path: str) -> tuple[int, dict[str, str], bytes]:
        prefix = f"/file/bot{self.token}/"
        failure = self._record(Call("download", {"path": path}, "GET"))
        if failure is not None:
            return failure.status, {"Content-Type": "text/plain"}, failure.message.encode()
        with self._lock:
            found = [c for p, c in self._state.files.values() if prefix + p == path]
        if not path.startswith(prefix) or not found:
            return 404, {"Content-Type": "text/plain"}, b"Not Found"
        return 200, {"Content-Type": "application/octet-stream"}, found[0]

    def _m_getFile(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        with self._lock:
            entry = self._state.files.get(str(params.get("file_id")))
        if entry is None:
            raise ApiError(400, "Bad Request: invalid file_id")
        file_path, content = entry
        if len(content) > 20 * 1024 * 1024:
            raise ApiError(400, "Bad Request: file is too big")
        file = {
            "file_id": params["file_id"],
            "file_unique_id": _unique_id(str(params["file_id"])),
            "file_size": len(content),
            "file_path": file_path,
        }
        return file, None

    def _sent_file(self, method: str, field: str, params: dict[str, Any]) -> tuple[Any, str | None]:
        """sendPhoto / sendDocument with a multipart upload, within the Bot API's documented
        limits: a photo at most 10 MB, any upload at most 50 MB (413 past it), a caption at
        most 1024 characters; the answer is the sent Message with its `photo` sizes or
        `document`. (The description for an oversized photo is this fake's own.)"""
        upload = params.get(field)
        if not isinstance(upload, tuple):
            raise ApiError(400, f"Bad Request: there is no {field} in the request")
        name, content = upload
        if len(content) > 50 * 1024 * 1024:
            raise ApiError(413, "Request Entity Too Large")
        if field == "photo" and len(content) > 10 * 1024 * 1024:
            raise ApiError(400, "Bad Request: the photo is larger than 10 MB")
        caption = str(params.get("caption") or "")
        if utf16_length(caption) > 1024:
            raise ApiError(400, "Bad Request: message caption is too long")
        chat_id = _int(params.get("chat_id"))
        file_id = f"{'AgAC' if field == 'photo' else 'BQAC'}-sent-{len(content)}"
        stored = {"file_id": file_id, "file_unique_id": _unique_id(file_id)}
        media: dict[str, Any] = (
            {"photo": [{**stored, "width": 320, "height": 240, "file_size": len(content)}]}
            if field == "photo"
            else {"document": {**stored, "file_name": name, "file_size": len(content)}}
        )
        with self._lock:
            self._state.next_message_id += 1
            message_id = self._state.next_message_id
            self._state.sent_files.append(
                {
                    "method": method,
                    "chat_id": str(params.get("chat_id")),
                    "name": name,
                    "content": content,
                    "caption": params.get("caption", ""),
                    "message_id": message_id,
                    "message_thread_id": params.get("message_thread_id"),
                }
            )
        message = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
            **media,
        }
        if caption:
            message["caption"] = caption
        return message, None

    def _m_sendPhoto(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        return self._sent_file("sendPhoto", "photo", params)

    def _m_sendDocument(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        return self._sent_file("sendDocument", "document", params)

    def _m_getMe(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        bot_id = int(self.token.split(":")[0])
        return {"id": bot_id, "is_bot": True, "username": self.bot_username}, None

    def _m_sendMessage(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        chat_id = params.get("chat_id")
        if chat_id in (None, ""):
            raise ApiError(400, "Bad Request: chat_id is empty")
        raw, parse_mode, text = _text_of(params)
        with self._lock:
            self._state.next_message_id += 1
            message: dict[str, Any] = {
                "message_id": self._state.next_message_id,
                "date": int(time.time()),
                "chat": {"id": _int(chat_id), "type": "private" if _int(chat_id) > 0 else "group"},
                "text": text,
            }
            if params.get("message_thread_id") is not None:
                message["message_thread_id"] = _int(params["message_thread_id"])
                message["is_topic_message"] = True
            reply = params.get("reply_parameters")
            if isinstance(reply, dict) and "message_id" in reply:
                message["reply_to_message"] = {"message_id": _int(reply["message_id"])}
            markup = params.get("reply_markup")
            if isinstance(markup, dict):
                _check_keyboard(markup)
                message["reply_markup"] = markup
            self._state.messages.append({**message, "raw_text": raw, "parse_mode": parse_mode})
            self._state.sent_at.append(time.time())
            self._state.last_write[str(chat_id)] = time.monotonic()
            self._state.drafts = {
                key: text for key, text in self._state.drafts.items() if key[0] != str(chat_id)
            }
        return message, None

    def _m_sendMessageDraft(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        """An ephemeral preview of a message being written, in a private chat only."""
        if not self.drafts_supported:
            raise ApiError(404, "Not Found")
        chat_id, draft_id = _int(params.get("chat_id")), _int(params.get("draft_id"))
        if chat_id <= 0:
            raise ApiError(400, "Bad Request: message drafts can be sent only to private chats")
        if draft_id == 0:
            raise ApiError(400, "Bad Request: draft_id must be non-zero")
        _, _, text = _text_of(params)
        with self._lock:
            self._state.drafts[(str(chat_id), draft_id)] = text
        return True, None

    def _m_editMessageText(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        """Edit a sent message in place: its text, and its keyboard (gone when not given).
        Enforces the per-chat edit pace (`edit_every`, a 429 with `retry_after`)."""
        chat_id, message_id = str(params.get("chat_id")), _int(params.get("message_id"))
        raw, parse_mode, text = _text_of(params, too_long="Bad Request: MESSAGE_TOO_LONG")
        with self._lock:
            now = time.monotonic()
            wait = self._state.last_write.get(chat_id, -1e9) + self.edit_every - now
            if wait > 0:
                self.rate_limited += 1
                raise ApiError(429, "Too Many Requests", retry_after=max(1, round(wait)))
            message = next(
                (
                    m
                    for m in self._state.messages
                    if m["message_id"] == message_id and str(m["chat"]["id"]) == chat_id
                ),
                None,
            )
            if message is None:
                raise ApiError(400, "Bad Request: message to edit not found")
            same_markup = "reply_markup" not in params and "reply_markup" not in message
            if message["raw_text"] == raw and message["parse_mode"] == parse_mode and same_markup:
                raise ApiError(
                    400,
                    "Bad Request: message is not modified: specified new message content and "
                    "reply markup are exactly the same as a current content and reply markup "
                    "of the message",
                )
            self._state.last_write[chat_id] = now
            message.update(text=text, raw_text=raw, parse_mode=parse_mode, edited=True)
            message.pop("reply_markup", None)
            if isinstance(params.get("reply_markup"), dict):
                message["reply_markup"] = params["reply_markup"]
            result = {k: v for k, v in message.items() if k not in ("raw_text", "parse_mode")}
        return result, None

    def _m_sendChatAction(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        if params.get("action") not in CHAT_ACTIONS:
            raise ApiError(400, "Bad Request: wrong parameter action in request")
        return True, None

    def _m_setMessageReaction(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        emoji = [r.get("emoji") for r in params.get("reaction") or []]
        if any(e not in REACTION_EMOJI for e in emoji):
            raise ApiError(400, "Bad Request: REACTION_INVALID")
        with self._lock:
            key = (str(params.get("chat_id")), _int(params.get("message_id")))
            self._state.reactions[key] = [str(e) for e in emoji]
        return True, None

    def _m_answerCallbackQuery(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        if not params.get("callback_query_id"):
            raise ApiError(400, "Bad Request: query is too old and response timeout expired")
        with self._lock:
            self._state.callback_answers.append(dict(params))
        return True, None

    def _m_setWebhook(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        url = str(params.get("url") or "")
        if not url:
            return self._m_deleteWebhook(params)
        if not url.startswith("https://"):
            raise ApiError(400, f"{_BAD_WEBHOOK}An HTTPS URL must be provided for webhook")
        secret = params.get("secret_token")
        if secret is not None and not _SECRET.match(str(secret)):
            raise ApiError(400, f"{_BAD_WEBHOOK}secret token contains unallowed characters")
        with self._lock:
            self._state.webhook = dict(params)
            self._lock.notify_all()
        return True, "Webhook was set"

    def _m_setMyCommands(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        # BotCommand: command 1-32 of [a-z0-9_], description 1-256 characters; at most 100
        commands = params.get("commands")
        if isinstance(commands, str):
            commands = json.loads(commands)
        if not isinstance(commands, list) or len(commands) > 100:
            raise ApiError(400, "Bad Request: commands must be a list of at most 100")
        for command in commands:
            name, what = str(command.get("command", "")), str(command.get("description", ""))
            if not _COMMAND.fullmatch(name):
                raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not 1 <= len(what) <= 256:
                raise ApiError(400, "Bad Request: command description is empty or too long")
        with self._lock:
            self._state.commands = [dict(c) for c in commands]
        return True, None

    def _m_deleteWebhook(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        with self._lock:
            existed, self._state.webhook = self._state.webhook is not None, None
        return True, "Webhook was deleted" if existed else "Webhook is already deleted"

    def _m_getWebhookInfo(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        webhook = self.webhook or {}
        return {"url": webhook.get("url", ""), "pending_update_count": 0}, None

    def _m_getUpdates(self, params: dict[str, Any]) -> tuple[Any, str | None]:
        offset = _int(params.get("offset") or 0)
        deadline = time.monotonic() + min(float(params.get("timeout") or 0), 5.0)
        with self._lock:
            while True:
                if self._state.webhook is not None:
                    raise ApiError(
                        409,
                        "Conflict: can't use getUpdates method while webhook is active; "
                        "use deleteWebhook to delete the webhook first",
                    )
                if offset:
                    self._state.updates = [
                        u for u in self._state.updates if u["update_id"] >= offset
                    ]
                if self._state.updates or time.monotonic() >= deadline:
                    return list(self._state.updates), None
                self._lock.wait(timeout=deadline - time.monotonic())


_STATUS_TEXT = {
    400: "Bad Request",
    403: "Forbidden: bot was blocked by the user",
    429: "Too Many Requests: retry later",
    500: "Internal Server Error",
    502: "Bad Gateway",
}


def _text_of(
    params: dict[str, Any], too_long: str = "Bad Request: message is too long"
) -> tuple[str, Any, str]:
    """The raw text, the parse mode and the text a person sees of a send, a draft or an edit,
    refused (400) the way Telegram refuses it: a parse mode this fake does not speak, an empty
    text, a text over 4,096 UTF-16 units (with `too_long`, which differs by method)."""
    raw = str(params.get("text") or "")
    parse_mode = params.get("parse_mode")
    if parse_mode not in (None, "", "HTML"):
        raise ApiError(400, f"Bad Request: unsupported parse_mode {parse_mode} in this fake")
    text = parse_html(raw) if parse_mode == "HTML" else raw
    if not text.strip():
        raise ApiError(400, "Bad Request: message text is empty")
    if utf16_length(text) > 4096:
        raise ApiError(400, too_long)
    return raw, parse_mode, text


def _check_keyboard(markup: dict[str, Any]) -> None:
    """Refuse an inline keyboard Telegram would refuse: callback_data must be 1-64 bytes."""
    for row in markup.get("inline_keyboard", []):
        for button in row:
            data = button.get("callback_data")
            if data is not None and not 1 <= len(str(data).encode()) <= 64:
                raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")


def _error_body(exc: ApiError) -> dict[str, Any]:
    body: dict[str, Any] = {"ok": False, "error_code": exc.status, "description": exc.description}
    if exc.retry_after is not None:
        body["parameters"] = {"retry_after": exc.retry_after}
        body["description"] = f"Too Many Requests: retry after {exc.retry_after}"
    return body


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ApiError(400, f"Bad Request: invalid integer {value!r}") from None


def _parse_body(request: BaseHTTPRequestHandler) -> dict[str, Any]:
    params, form = read_params(request)
    params.update(form or {})
    for name in _JSON_FIELDS:  # form and query bodies carry objects as JSON strings
        if isinstance(params.get(name), str):
            params[name] = json.loads(params[name])
    return params


def _unique_id(file_id: str) -> str:
    """A stable `file_unique_id` for a file id (Telegram's are short and opaque)."""
    return "AQAD" + hashlib.sha256(file_id.encode()).hexdigest()[:12]


def _parse_multipart(request: BaseHTTPRequestHandler) -> dict[str, Any]:
    """A multipart/form-data body: text fields as strings, file fields as (filename, bytes)."""
    length = int(request.headers.get("Content-Length") or 0)
    raw = request.rfile.read(length)
    head = f"Content-Type: {request.headers.get('Content-Type')}\r\n\r\n".encode()
    message = BytesParser(policy=default).parsebytes(head + raw)
    params: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if filename is not None:
            params[str(name)] = (filename, payload)
        else:
            params[str(name)] = payload.decode()
    return params
