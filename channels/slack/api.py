"""Slack Web API calls through slack_sdk: the only module that touches slack_sdk's client.

slack_sdk raises `SlackApiError` for `{"ok": false}` answers (Slack reports errors at HTTP
200) and urllib errors for the network; both become `channels.errors` exceptions here. A 429
is retried once by slack_sdk's `RateLimitErrorRetryHandler`, honouring Retry-After.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.error import URLError
from urllib.parse import urlsplit

import httpx2
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
from slack_sdk.web import SlackResponse

from channels.errors import (
    AuthenticationError,
    DestinationError,
    MessageRejected,
    PermanentPlatformError,
    PlatformError,
    PlatformUnavailable,
    RateLimited,
)
from channels.media.fetch import fetch_bounded
from channels.slack.settings import DEFAULT_BASE_URL

T = TypeVar("T")

_PLATFORM = "slack"
_FILE_HOSTS = frozenset({"files.slack.com"})
_AUTH = frozenset(
    "invalid_auth not_authed account_inactive token_revoked token_expired no_permission "
    "missing_scope not_allowed_token_type ekm_access_denied".split()
)
_DESTINATION = frozenset(
    "channel_not_found not_in_channel is_archived user_not_found thread_not_found "
    "message_not_found cannot_dm_bot restricted_action".split()
)
_CONTENT = frozenset("msg_too_long no_text invalid_blocks too_many_attachments".split())
MAX_THREAD_PAGES = 10
"""Pages of a thread read when looking for a reply's chunks (1,000 messages)."""
_TRANSIENT = frozenset("internal_error fatal_error service_unavailable request_timeout".split())


class _TtlCache:
    """A small thread-safe cache whose entries expire `ttl` seconds after being stored."""

    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self._ttl, self._clock = ttl, clock
        self._entries: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def get(self, key: str, load: Callable[[], str]) -> str:
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None and entry[0] > now:
            return entry[1]
        value = load()
        with self._lock:
            self._entries[key] = (now + self._ttl, value)
        return value


class SlackApi:
    """The Slack Web API calls the channel needs. Thread-safe."""

    def __init__(
        self,
        token: str,
        base_url: str = DEFAULT_BASE_URL,
        *,
        timeout: int = 10,
        fast_timeout: int = 5,
        lookup_timeout: int = 2,
        rate_limit_retries: int = 1,
        user_cache_ttl: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        def client(seconds: int) -> WebClient:
            retry = RateLimitErrorRetryHandler(max_retry_count=rate_limit_retries)
            return WebClient(
                token=token, base_url=base_url, timeout=seconds, retry_handlers=[retry]
            )

        self._token, self._base_url = token, base_url
        self._client = client(timeout)
        self._fast = client(fast_timeout)  # reactions: never hold a turn up long
        self._lookup = client(lookup_timeout)  # called on the webhook path: Slack waits 3 s
        self._names = _TtlCache(user_cache_ttl, clock)
        self._bot_user_id: str | None = None

    def post_message(
        self,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """Post mrkdwn `text` to `channel` (in the thread `thread_ts`, if given), with message
        `metadata` (`event_type`, `event_payload`) if given; return the new message's ts."""
        response = call_slack(
            "chat.postMessage",
            lambda: self._client.chat_postMessage(
                channel=channel,
                text=text,
                thread_ts=thread_ts,
                mrkdwn=True,
                unfurl_links=False,
                metadata=dict(metadata) if metadata else None,
            ),
        )
        return str(response["ts"])

    def recent_metadata(
        self, channel: str, *, thread_ts: str | None, event_type: str, limit: int = 100
    ) -> list[tuple[str, dict[str, Any]]]:
        """(ts, event_payload) of the messages in the thread `thread_ts` (or, without one, the
        latest `limit` of `channel`) whose metadata is of `event_type`. A thread is read from
        its start, `limit` messages a page, `MAX_THREAD_PAGES` pages at most
        (`conversations.replies` / `conversations.history`, Tier 3)."""
        messages: list[dict[str, Any]] = []
        if thread_ts:
            cursor: str | None = None
            for _ in range(MAX_THREAD_PAGES):
                page = call_slack(
                    "conversations.replies",
                    functools.partial(
                        self._client.conversations_replies,
                        channel=channel,
                        ts=thread_ts,
                        include_all_metadata=True,
                        limit=limit,
                        cursor=cursor,
                    ),
                )
                messages.extend(page.get("messages") or [])
                cursor = (page.get("response_metadata") or {}).get("next_cursor")
                if not page.get("has_more") or not cursor:
                    break
        else:
            response = call_slack(
                "conversations.history",
                lambda: self._client.conversations_history(
                    channel=channel, include_all_metadata=True, limit=limit
                ),
            )
            messages = list(response.get("messages") or [])
        found: list[tuple[str, dict[str, Any]]] = []
        for message in messages:
            metadata = message.get("metadata") or {}
            payload = metadata.get("event_payload")
            if metadata.get("event_type") == event_type and isinstance(payload, dict):
                found.append((str(message.get("ts")), payload))
        return found

    def post_blocks(
        self, channel: str, text: str, blocks: list[dict[str, Any]], *, thread_ts: str | None
    ) -> str:
        """Post Block Kit `blocks` (with `text` as the notification fallback); return the ts."""
        response = call_slack(
            "chat.postMessage",
            lambda: self._client.chat_postMessage(
                channel=channel, text=text, blocks=blocks, thread_ts=thread_ts
            ),
        )
        return str(response["ts"])

    def update_message(self, channel: str, ts: str, text: str) -> None:
        """Replace the bot's message `ts` in `channel` with mrkdwn `text`; its blocks (and so
        an approval's buttons) go (`chat.update`, Tier 3: about 50 a minute per workspace)."""
        call_slack(
            "chat.update",
            lambda: self._client.chat_update(channel=channel, ts=ts, text=text, blocks=[]),
        )

    def post_ephemeral(
        self, channel: str, user: str, text: str, *, thread_ts: str | None = None
    ) -> None:
        """Show `text` to `user` alone, in `channel` (and thread)."""
        call_slack(
            "chat.postEphemeral",
            lambda: self._fast.chat_postEphemeral(
                channel=channel, user=user, text=text, thread_ts=thread_ts
            ),
        )

    def download(self, url: str, max_bytes: int) -> tuple[bytes, str]:
        """A shared file's bytes and content type from its `url_private`, with the bot token.
        The token is only ever sent to Slack (`files.slack.com`) or to the API's own host, so
        a crafted event cannot make us hand it elsewhere: other hosts raise
        `PermanentPlatformError`."""
        host = urlsplit(url).hostname or ""
        if host not in _FILE_HOSTS and host != urlsplit(self._base_url).hostname:
            raise PermanentPlatformError(_PLATFORM, "download", f"not a Slack file URL: {host}")
        headers = {"Authorization": f"Bearer {self._token}"}
        with httpx2.Client(follow_redirects=True) as client:
            return fetch_bounded(client, url, headers, max_bytes, _PLATFORM, self._token)

    def upload_file(
        self, channel: str, content: bytes, name: str, comment: str, *, thread_ts: str | None
    ) -> str:
        """Upload through `files.getUploadURLExternal` and `files.completeUploadExternal`
        (the SDK's `files_upload_v2`), shared to `channel` (in `thread_ts`); the file's id."""
        response = call_slack(
            "files.completeUploadExternal",
            lambda: self._client.files_upload_v2(
                channel=channel,
                content=content,
                filename=name,
                title=name,
                initial_comment=comment or None,
                thread_ts=thread_ts,
            ),
        )
        files = response.get("files") or [{}]
        return str(files[0].get("id", ""))

    def add_reaction(self, channel: str, ts: str, name: str) -> bool:
        """React with `name` (e.g. "eyes"); False if the bot had already reacted so."""
        return _tolerate(
            "already_reacted",
            "reactions.add",
            lambda: self._fast.reactions_add(channel=channel, timestamp=ts, name=name),
        )

    def remove_reaction(self, channel: str, ts: str, name: str) -> bool:
        """Remove the bot's `name` reaction; False if there was none."""
        return _tolerate(
            "no_reaction",
            "reactions.remove",
            lambda: self._fast.reactions_remove(channel=channel, timestamp=ts, name=name),
        )

    def display_name(self, user_id: str) -> str:
        """The user's display name (else real name, else handle), cached for the TTL. Raises a
        `PlatformError` when users.info fails (failures are not cached)."""
        return self._names.get(user_id, lambda: self._load_name(user_id))

    def _load_name(self, user_id: str) -> str:
        response = call_slack("users.info", lambda: self._lookup.users_info(user=user_id))
        user = response.get("user") or {}
        profile = user.get("profile") or {}
        for candidate in (profile.get("display_name"), profile.get("real_name"), user.get("name")):
            if candidate:
                return str(candidate)
        return user_id

    def bot_user_id(self) -> str:
        """The bot's own user id from auth.test, cached for the process."""
        if self._bot_user_id is None:
            self._bot_user_id = str(self.auth_test()["user_id"])
        return self._bot_user_id

    def auth_test(self) -> dict[str, Any]:
        """auth.test's answer: the bot's user_id, bot_id, team and team_id."""
        response = call_slack("auth.test", lambda: self._lookup.auth_test())
        return dict(response.data) if isinstance(response.data, dict) else {}


def _tolerate(error: str, method: str, call: Callable[[], SlackResponse]) -> bool:
    try:
        call_slack(method, call)
    except PermanentPlatformError as exc:
        if exc.description != error:
            raise
        return False
    return True


def call_slack(method: str, call: Callable[[], T]) -> T:
    """Run one slack_sdk call (of Web API `method`), translating its failures into ours:
    `RateLimited`, `PlatformUnavailable`, `AuthenticationError`, `DestinationError`,
    `MessageRejected`, else `PermanentPlatformError` or `PlatformError`."""
    try:
        return call()
    except SlackApiError as exc:
        raise _error(method, exc.response) from None
    except (URLError, TimeoutError, ConnectionError) as exc:
        raise PlatformUnavailable(_PLATFORM, method, f"{type(exc).__name__}: {exc}") from None
    except SlackClientError as exc:
        raise PlatformError(_PLATFORM, method, f"{type(exc).__name__}: {exc}") from None


def _error(method: str, response: SlackResponse) -> PlatformError:
    data = response.data if isinstance(response.data, dict) else {}
    error = str(data.get("error") or f"HTTP {response.status_code}")
    if response.status_code == 429 or error == "ratelimited":
        return RateLimited(_PLATFORM, method, error, _retry_after(response.headers))
    if response.status_code >= 500 or error in _TRANSIENT:
        return PlatformUnavailable(_PLATFORM, method, error)
    kind: type[PlatformError] = PermanentPlatformError
    if error in _AUTH:
        kind = AuthenticationError
    elif error in _DESTINATION:
        kind = DestinationError
    elif error in _CONTENT:
        kind = MessageRejected
    return kind(_PLATFORM, method, error)


def _retry_after(headers: Mapping[str, Any]) -> float:
    for key, value in headers.items():
        if key.lower() == "retry-after":
            raw = value[0] if isinstance(value, list) else value
            try:
                return float(raw)
            except (TypeError, ValueError):
                break
    return 1.0
