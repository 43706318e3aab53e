"""A fake Slack Web API: a real HTTP server on 127.0.0.1 speaking the Web API wire format.

`POST /api/<method>` (GET works too) with a form, JSON or query-string body and
`Authorization: Bearer <token>` answers `{"ok": true, ...}` or, like Slack, HTTP 200 with
`{"ok": false, "error": "..."}`. It checks what Slack checks and our code could get wrong:
the token (a `token` inside a JSON body is ignored), `msg_too_long` over 40,000 characters,
`no_text`, `already_reacted`, `no_reaction`, unknown users. Rate limits are HTTP 429 with
`Retry-After` in whole seconds; `chat.update` changes a posted message in place and is
limited to one call per `update_every` seconds for the workspace (Tier 3). A message posted
with `metadata` keeps it; `conversations.replies` (a thread, oldest first) and
`conversations.history` (a channel's top-level messages, newest first) return it only with
`include_all_metadata`; a thread comes in pages of `limit` (at most `page_limit`) with a
`next_cursor`. Every call is recorded; `fail_next` scripts failures.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from tests.fakes._http import Failure, FakeHttpServer, read_params

DEFAULT_TOKEN = "xoxb-fake-token"
BOT_USER_ID = "UBOT0001"
BOT_ID = "BBOT0001"
TEAM_ID = "T0001"


@dataclass(frozen=True)
class Call:
    """One recorded request; `token` is the bearer token it carried, if any."""

    method: str
    params: dict[str, Any]
    token: str | None


@dataclass
class _State:
    messages: list[dict[str, Any]] = field(default_factory=list)
    reactions: set[tuple[str, str, str]] = field(default_factory=set)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    next_ts: int = 0
    files: dict[str, bytes] = field(default_factory=dict)
    pending_uploads: dict[str, dict[str, Any]] = field(default_factory=dict)
    uploads: list[dict[str, Any]] = field(default_factory=list)


class FakeSlackApi(FakeHttpServer[Call]):
    """The fake server. Use as a context manager or call `start()` / `stop()`."""

    def __init__(self, token: str = DEFAULT_TOKEN) -> None:
        super().__init__()
        self.token = token
        self.update_every = 1.2
        self.page_limit = 1000
        self.rate_limited = 0
        self._last_update = -1e9
        self._state = _State()
        self.add_user("U0USER", name="ada", display_name="Ada", real_name="Ada Lovelace")

    @property
    def base_url(self) -> str:
        """What to set SLACK_API_BASE_URL to (ends in /api/)."""
        return f"{self._origin}/api/"

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Messages successfully posted, as Slack stored them."""
        with self._lock:
            return list(self._state.messages)

    @property
    def reactions(self) -> set[tuple[str, str, str]]:
        """Current bot reactions as (channel, ts, name)."""
        with self._lock:
            return set(self._state.reactions)

    def add_user(
        self, user_id: str, *, name: str, display_name: str = "", real_name: str = ""
    ) -> None:
        """Make users.info know a user."""
        profile = {"display_name": display_name, "real_name": real_name}
        with self._lock:
            self._state.users[user_id] = {"id": user_id, "name": name, "profile": profile}

    def fail_next(
        self,
        count: int = 1,
        *,
        status: int = 429,
        error: str | None = None,
        retry_after: int | None = None,
        method: str | None = None,
    ) -> None:
        """Fail the next `count` calls (to `method`, or to any). Status 429 answers with
        Retry-After (default 0); status 200 with `{"ok": false, "error": error}`; others with
        a plain-text server error."""
        if status == 429 and retry_after is None:
            retry_after = 0
        default = {429: "ratelimited", 200: "internal_error"}.get(status, "server_error")
        self._queue_failures(count, Failure(status, error or default, retry_after, method))

    # request handling -------------------------------------------------------------------

    def add_file(self, name: str, content: bytes) -> str:
        """Serve `content` as a shared file; returns its `url_private_download`, which answers
        only with the bot token (without it, a web page, as Slack does)."""
        with self._lock:
            self._state.files[name] = content
        return f"{self._origin}/files/{name}"

    @property
    def uploads(self) -> list[dict[str, Any]]:
        """Files shared with files.completeUploadExternal: id, name, content, channel_id,
        thread_ts, initial_comment."""
        with self._lock:
            return list(self._state.uploads)

    def respond(self, request: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        """Answer one HTTP request to `/api/<method>`, a file download at `/files/<name>` or
        an upload to a URL from files.getUploadURLExternal."""
        path = urlsplit(request.path).path
        if path.startswith(("/files/", "/upload/")):
            return self._file_transfer(request, path)
        if not path.startswith("/api/"):
            status, body = 404, _json({"ok": False, "error": "unknown_method"})
            headers: dict[str, str] = {}
        else:
            try:
                params, token = _read(request)
            except ValueError:
                status, headers, body = 200, {}, _json({"ok": False, "error": "invalid_json"})
            else:
                status, headers, body = self.handle(path[len("/api/") :], params, token)
        headers.setdefault("Content-Type", "application/json; charset=utf-8")
        return status, headers, body

    def handle(
        self, method: str, params: dict[str, Any], token: str | None
    ) -> tuple[int, dict[str, str], bytes]:
        """Answer one request: (status, extra headers, body)."""
        failure = self._record(Call(method, params, token))
        if failure is not None and failure.status != 200:
            if failure.status == 429:
                headers = {"Retry-After": str(failure.retry_after)}
                return 429, headers, _json({"ok": False, "error": failure.message})
            return failure.status, {"Content-Type": "text/plain"}, b"Internal Server Error"
        if method == "chat.update":
            with self._lock:
                wait = self._last_update + self.update_every - time.monotonic()
                if wait > 0:
                    self.rate_limited += 1
                    retry_after = str(max(1, round(wait)))
                    return (
                        429,
                        {"Retry-After": retry_after},
                        _json({"ok": False, "error": "ratelimited"}),
                    )
        if not token:
            return 200, {}, _json({"ok": False, "error": "not_authed"})
        if token != self.token:
            return 200, {}, _json({"ok": False, "error": "invalid_auth"})
        if failure is not None:
            return 200, {}, _json({"ok": False, "error": failure.message})
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return 404, {}, _json({"ok": False, "error": "unknown_method"})
        result = handler(params)
        return 200, {}, _json(result if "ok" in result else {"ok": True, **result})

    def _file_transfer(
        self, request: BaseHTTPRequestHandler, path: str
    ) -> tuple[int, dict[str, str], bytes]:
        auth = request.headers.get("Authorization") or ""
        length = int(request.headers.get("Content-Length") or 0)
        data = request.rfile.read(length) if length else b""
        kind, _, name = path[1:].partition("/")
        failure = self._record(
            Call("download" if kind == "files" else "upload", {"name": name}, auth)
        )
        if failure is not None:
            return failure.status, {"Content-Type": "text/plain"}, failure.message.encode()
        with self._lock:
            if kind == "upload":
                pending = self._state.pending_uploads.get(name)
                if pending is None:
                    return 404, {"Content-Type": "text/plain"}, b"Not Found"
                pending["content"] = data
                return 200, {"Content-Type": "text/plain"}, f"OK - {len(data)}".encode()
            content = self._state.files.get(name)
        if content is None:
            return 404, {"Content-Type": "text/plain"}, b"Not Found"
        if auth != f"Bearer {self.token}":
            return 200, {"Content-Type": "text/html"}, b"<html>Sign in to Slack</html>"
        return 200, {"Content-Type": "application/octet-stream"}, content

    def _m_files_getUploadURLExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("filename") or not str(params.get("length", "")).isdigit():
            return {"ok": False, "error": "invalid_arguments"}
        with self._lock:
            file_id = f"F{len(self._state.pending_uploads) + 1:08d}"
            self._state.pending_uploads[file_id] = {"name": params["filename"], "content": None}
        return {"upload_url": f"{self._origin}/upload/{file_id}", "file_id": file_id}

    def _m_files_completeUploadExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        files = params.get("files")
        files = json.loads(files) if isinstance(files, str) else files or []
        shared = []
        with self._lock:
            for item in files:
                pending = self._state.pending_uploads.get(str(item.get("id")))
                if pending is None or pending["content"] is None:
                    return {"ok": False, "error": "file_not_found"}
                self._state.uploads.append(
                    {
                        "id": item["id"],
                        "name": pending["name"],
                        "content": pending["content"],
                        "channel_id": params.get("channel_id"),
                        "thread_ts": params.get("thread_ts"),
                        "initial_comment": params.get("initial_comment"),
                    }
                )
                shared.append({"id": item["id"], "title": item.get("title", "")})
        return {"files": shared}

    def _m_auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": "https://fake.slack.com/",
            "team": "Fake Team",
            "user": "harness",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
        }

    def _m_chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params.get("channel") or "")
        text = params.get("text")
        if not channel or channel[0] not in "CDG":
            return {"ok": False, "error": "channel_not_found"}
        if not text and not params.get("blocks"):
            return {"ok": False, "error": "no_text"}
        if len(str(text or "")) > 40_000:
            return {"ok": False, "error": "msg_too_long"}
        with self._lock:
            self._state.next_ts += 1
            ts = f"{int(time.time())}.{self._state.next_ts:06d}"
            message = {"type": "message", "user": BOT_USER_ID, "bot_id": BOT_ID, "text": text}
            message["ts"] = ts
            if params.get("blocks"):
                blocks = params["blocks"]
                message["blocks"] = json.loads(blocks) if isinstance(blocks, str) else blocks
            if params.get("thread_ts"):
                message["thread_ts"] = str(params["thread_ts"])
            metadata = params.get("metadata")
            metadata = json.loads(metadata) if isinstance(metadata, str) else metadata
            if metadata:
                if not isinstance(metadata, dict) or not metadata.get("event_type"):
                    return {"ok": False, "error": "invalid_metadata_format"}
                message["metadata"] = metadata
            self._state.messages.append({**message, "channel": channel})
        return {"channel": channel, "ts": ts, "message": message}

    def _m_chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        """Replace a posted message's text and blocks (an empty list removes them)."""
        channel, ts, text = (
            str(params.get("channel") or ""),
            str(params.get("ts") or ""),
            params.get("text"),
        )
        if not text:
            return {"ok": False, "error": "no_text"}
        with self._lock:
            message = next(
                (m for m in self._state.messages if m["ts"] == ts and m["channel"] == channel),
                None,
            )
            if message is None:
                return {"ok": False, "error": "message_not_found"}
            self._last_update = time.monotonic()
            message["text"] = text
            blocks = params.get("blocks")
            blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
            if blocks:
                message["blocks"] = blocks
            else:
                message.pop("blocks", None)
        return {"channel": channel, "ts": ts, "text": text}

    def _m_conversations_replies(self, params: dict[str, Any]) -> dict[str, Any]:
        """A thread: its parent (when it is one of the stored messages) and its replies."""
        channel, ts = str(params.get("channel") or ""), str(params.get("ts") or "")
        if not ts:
            return {"ok": False, "error": "thread_not_found"}
        with self._lock:
            thread = [
                m
                for m in self._state.messages
                if m["channel"] == channel and (m["ts"] == ts or m.get("thread_ts") == ts)
            ]
        start = int(params.get("cursor") or 0)
        size = min(int(params.get("limit") or 100), self.page_limit)
        page = {"messages": _listed(thread[start : start + size], params)}
        if start + size < len(thread):
            page.update(has_more=True, response_metadata={"next_cursor": str(start + size)})
        return {**page, "has_more": page.get("has_more", False)}

    def _m_conversations_history(self, params: dict[str, Any]) -> dict[str, Any]:
        """A channel's top-level messages, newest first."""
        channel = str(params.get("channel") or "")
        with self._lock:
            top = [m for m in self._state.messages if m["channel"] == channel]
        top = [m for m in top if m.get("thread_ts") in (None, m["ts"])]
        return {"messages": _listed(list(reversed(top)), params), "has_more": False}

    def _m_chat_postEphemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        """An ephemeral message is not stored with the channel's messages (see `calls_to`)."""
        if not params.get("user") or not params.get("channel"):
            return {"ok": False, "error": "user_not_in_channel"}
        return {"message_ts": f"{int(time.time())}.000000"}

    def _m_reactions_add(self, params: dict[str, Any]) -> dict[str, Any]:
        key = _reaction_key(params)
        with self._lock:
            if key in self._state.reactions:
                return {"ok": False, "error": "already_reacted"}
            self._state.reactions.add(key)
        return {}

    def _m_reactions_remove(self, params: dict[str, Any]) -> dict[str, Any]:
        key = _reaction_key(params)
        with self._lock:
            if key not in self._state.reactions:
                return {"ok": False, "error": "no_reaction"}
            self._state.reactions.discard(key)
        return {}

    def _m_users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            user = self._state.users.get(str(params.get("user")))
        return {"user": user} if user else {"ok": False, "error": "user_not_found"}


def _reaction_key(params: dict[str, Any]) -> tuple[str, str, str]:
    return str(params.get("channel")), str(params.get("timestamp")), str(params.get("name"))


def _listed(messages: list[dict[str, Any]], params: dict[str, Any]) -> list[dict[str, Any]]:
    """At most `limit` messages as Slack lists them: metadata only with include_all_metadata."""
    limit = int(params.get("limit") or 100)
    with_metadata = str(params.get("include_all_metadata")).lower() in ("1", "true")
    shown = []
    for message in messages[:limit]:
        item = {k: v for k, v in message.items() if k != "channel"}
        if not with_metadata:
            item.pop("metadata", None)
        shown.append(item)
    return shown


def _json(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


def _read(request: BaseHTTPRequestHandler) -> tuple[dict[str, Any], str | None]:
    params, form = read_params(request)  # Slack ignores a token inside a JSON body
    token = None
    auth = request.headers.get("Authorization") or ""
    if auth.startswith("Bearer "):
        token = auth[len("Bearer ") :]
    if form is not None:
        token = token or form.pop("token", None)
        params.update(form)
    return params, token
