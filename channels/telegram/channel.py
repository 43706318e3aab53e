"""The Telegram channel: webhook verification and transform, replies as HTML messages."""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Mapping
from typing import Any

from channels.base import ChunkSent, Download, Ignored, Inbound, PollBatch
from channels.errors import (
    ChannelNotConfiguredError,
    MessageFormatError,
    PlatformError,
    refuse_oversized,
)
from channels.lookup import BackgroundLookup
from channels.markup import cut_utf16
from channels.telegram import draft
from channels.telegram.api import TelegramApi, redact
from channels.telegram.approvals import keyboard, request_text
from channels.telegram.format import Chunk, to_chunks
from channels.telegram.meta import TelegramMeta
from channels.telegram.settings import TelegramSettings
from channels.telegram.setup import ALLOWED_UPDATES, set_up
from channels.telegram.transform import CHANNEL, Audience, transform_update
from channels.telegram.verify import verify_secret_token
from harness.events import ApprovalRequested, Attachment, Destination
from harness.settings_errors import read_settings

log = logging.getLogger(__name__)

PHOTO_TYPES = frozenset({"image/jpeg", "image/png", "image/webp"})
MAX_PHOTO_BYTES = 10 * 1024 * 1024
"""sendPhoto takes photos up to 10 MB (Bot API); larger images go as documents."""
MAX_CAPTION = 1024
"""A caption's limit in characters (UTF-16 code units, as Telegram counts)."""


class TelegramChannel:
    """Telegram through the Bot API. Implements `channels.base.Channel` and, in polling mode,
    `channels.base.PollingChannel`. Thread-safe."""

    name = CHANNEL
    # RefreshingChannel: "typing…" is "set for 5 seconds or less" (Bot API, sendChatAction);
    # refreshed half a second before it fades, the margin for the call's own time
    acknowledge_lasts = 5.0
    acknowledge_every = 4.5

    def __init__(self, settings: TelegramSettings, api: TelegramApi | None = None) -> None:
        if settings.telegram_bot_token is None:
            raise ChannelNotConfiguredError("TELEGRAM_BOT_TOKEN is not set")
        self.settings = settings
        self.api = api or TelegramApi(
            settings.telegram_bot_token.get_secret_value(), settings.telegram_api_base_url
        )
        self._lock = threading.Lock()
        self._username = BackgroundLookup(self._fetch_username, name="telegram getMe")
        self._offset: int | None = None
        self._previews = draft.Previews(settings.telegram_draft_previews)

    @property
    def polling(self) -> bool:
        """True when TELEGRAM_MODE is polling: updates come from `poll`, not webhooks."""
        return self.settings.telegram_mode == "polling"

    def verify(self, headers: Mapping[str, str], body: bytes) -> None:
        """Check the secret token header; raises `WebhookRejected(401)`."""
        secret = self.settings.telegram_webhook_secret
        verify_secret_token(headers, secret.get_secret_value() if secret else None)

    def transform(self, payload: Mapping[str, Any], headers: Mapping[str, str]) -> Inbound:
        """See `channels.telegram.transform.transform_update`."""
        return transform_update(
            payload,
            bot_id=self.api.bot_id,
            audience=Audience(
                allowed_chats=self.settings.telegram_allowed_chats,
                drop_unlisted=self.settings.dm_policy == "allowlist",
                group_trigger=self.settings.telegram_group_trigger,
            ),
            bot_username=self._bot_username,
        )

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
        """Post `response` as HTML messages (see `Channel.send_reply`). The first chunk replies
        to the user's message; all go to the forum topic if there is one. A chunk Telegram
        cannot parse is sent again as plain text."""
        sent: list[str] = []
        for index, chunk in enumerate(to_chunks(response)):
            if index in skip_chunks:
                continue
            reply_to = destination.message_id if index == 0 else None
            message = self._send_chunk(chunk, destination, reply_to, reply_key, index)
            message_id = str(message["message_id"])
            sent.append(message_id)
            if on_chunk_sent is not None:
                on_chunk_sent(index, message_id)
        return sent

    def _send_chunk(
        self,
        chunk: Chunk,
        destination: Destination,
        reply_to: str | None,
        reply_key: str,
        index: int,
    ) -> dict[str, Any]:
        target = {"reply_to_message_id": reply_to, "message_thread_id": destination.thread_id}
        try:
            return self.api.send_message(
                destination.chat_id, chunk.html, parse_mode="HTML", **target
            )
        except MessageFormatError as exc:
            log.warning(
                "telegram reply %s chunk %d refused as HTML, sending plain text: %s",
                reply_key,
                index,
                exc.description,
            )
            return self.api.send_message(destination.chat_id, chunk.plain, **target)

    # -- streamed drafts (channels.drafts.DraftingChannel) ------------------------------
    @property
    def stream_replies(self) -> bool | None:
        """TELEGRAM_STREAM_REPLIES; None follows STREAM_REPLIES."""
        return self.settings.telegram_stream_replies

    def draft_interval(self, destination: Destination) -> float:
        """See `channels.telegram.draft.edit_interval`."""
        return draft.edit_interval(destination, self.settings.telegram_draft_every)

    def preview_draft(
        self, key: str, text: str, destination: Destination, channel_meta: Mapping[str, Any]
    ) -> bool:
        """In a private chat, show the first message's worth of `text` as a `sendMessageDraft`
        preview (see `channels.telegram.draft.Previews`); False where previews are not offered."""
        chunk = draft.first_chunk(text)
        if chunk is None or not self._previews.offered(destination, channel_meta):
            return False
        return self._previews.show(self.api, draft.draft_id(key), chunk, destination)

    def post_draft(
        self, text: str, destination: Destination, channel_meta: Mapping[str, Any]
    ) -> str:
        """Send the first message's worth of `text` as the draft; return its id."""
        chunk = draft.first_chunk(text)
        if chunk is None:
            raise ValueError("a draft needs some text")
        return draft.post(self.api, chunk, destination)

    def edit_draft(
        self, message_id: str, text: str, destination: Destination, channel_meta: Mapping[str, Any]
    ) -> None:
        """Show the first message's worth of `text` in the draft."""
        chunk = draft.first_chunk(text)
        if chunk is not None:
            draft.edit(self.api, message_id, chunk, destination)

    def finish_draft(
        self,
        message_id: str,
        response: str,
        destination: Destination,
        channel_meta: Mapping[str, Any],
    ) -> None:
        """Make the draft exactly the reply's first chunk (see `DraftingChannel`)."""
        chunk = draft.first_chunk(response)
        if chunk is not None:
            draft.edit(self.api, message_id, chunk, destination)

    def download(self, attachment: Attachment, max_bytes: int) -> Download:
        """`getFile`, then the file URL (see `channels.base.FileChannel.download`)."""
        refuse_oversized(CHANNEL, "getFile", attachment.size, max_bytes)
        content, content_type = self.api.download(self.api.get_file_path(attachment.ref), max_bytes)
        return Download(content, content_type)

    def send_file(
        self,
        content: bytes,
        name: str,
        mime_type: str,
        caption: str,
        destination: Destination,
        channel_meta: Mapping[str, Any],
    ) -> str:
        """`sendPhoto` for JPEG/PNG/WebP images up to the Bot API's 10 MB for photos,
        `sendDocument` for anything else; the caption cut to Telegram's 1024 characters."""
        photo = mime_type in PHOTO_TYPES and len(content) <= MAX_PHOTO_BYTES
        method, field = ("sendPhoto", "photo") if photo else ("sendDocument", "document")
        sent = self.api.send_file(
            method,
            field,
            destination.chat_id,
            (name, content, mime_type),
            caption=cut_utf16(caption, MAX_CAPTION),
            message_thread_id=destination.thread_id,
        )
        return str(sent.get("message_id", ""))

    def acknowledge(self, destination: Destination, channel_meta: Mapping[str, Any]) -> None:
        """Show "typing…" (it fades after about five seconds). Never raises."""
        try:
            self.api.send_chat_action(
                destination.chat_id, "typing", message_thread_id=destination.thread_id
            )
        except Exception as exc:  # best effort by contract
            log.warning("telegram typing indicator failed: %s", self._describe(exc))

    def complete(self, destination: Destination, channel_meta: Mapping[str, Any]) -> None:
        """Nothing to undo on Telegram: the typing indicator fades by itself."""

    def request_text(self, request: ApprovalRequested) -> str:
        """The request as posted (see `channels.telegram.approvals.request_text`)."""
        return request_text(request.tool, request.summary, request.timeout)

    def ask_approval(self, request: ApprovalRequested) -> str:
        """Post the request with its inline keyboard (see `channels.approvals`)."""
        target = request.reply.destination
        sent = self.api.send_keyboard(
            target.chat_id,
            self.request_text(request),
            keyboard(request.approval_id),
            reply_to_message_id=target.message_id,
            message_thread_id=target.thread_id,
        )
        return str(sent.get("message_id", ""))

    def settle_approval(
        self,
        destination: Destination,
        channel_meta: Mapping[str, Any],
        notice: str,
        outcome: str | None,
    ) -> None:
        """Answer the callback query; with `outcome`, edit the request to show it (which
        removes the buttons). Never raises."""
        try:
            pressed = TelegramMeta.of(channel_meta)
            if pressed.callback_query_id:  # a typed yes/no has none
                self.api.answer_callback_query(pressed.callback_query_id, notice)
            if outcome is not None and destination.message_id is not None:
                text = f"{pressed.request_text or ''}\n\n{outcome}".strip()
                self.api.edit_message_text(destination.chat_id, destination.message_id, text)
        except PlatformError as exc:
            log.warning("telegram: could not settle an approval: %s", self._describe(exc))

    def setup(self) -> str:
        """See `channels.telegram.setup.set_up`."""
        return set_up(self.api, self.settings)

    def poll(self, timeout: float = 30.0) -> list[Inbound]:
        """Long-poll getUpdates for up to `timeout` seconds; return the transformed updates.
        Each call confirms the updates returned by the previous one, so after a crash they are
        delivered again (with the same event ids). Raises a `PlatformError`."""
        with self._lock:
            updates = self.api.get_updates(
                offset=self._offset, timeout=int(timeout), allowed_updates=ALLOWED_UPDATES
            )
            if updates:
                self._offset = max(int(u.get("update_id", 0)) for u in updates) + 1
        return [self.transform(update, {}) for update in updates]

    def poll_from(self, cursor: str | None, timeout: float = 30.0) -> PollBatch:
        """Long-poll getUpdates after `cursor` (an update offset) for up to `timeout` seconds;
        return the transformed updates and the offset that confirms them. Keeps no offset of
        its own (`channels.base.ResumablePollingChannel`). Raises a `PlatformError`."""
        offset = int(cursor) if cursor else None
        updates = self.api.get_updates(
            offset=offset, timeout=int(timeout), allowed_updates=ALLOWED_UPDATES
        )
        if updates:
            offset = max(int(u.get("update_id", 0)) for u in updates) + 1
        inbound = [self._transform_polled(update) for update in updates]
        return PollBatch(inbound, str(offset) if offset is not None else None)

    def _transform_polled(self, update: Mapping[str, Any]) -> Inbound:
        # One unreadable update must not block every later one: it would come back forever.
        try:
            return self.transform(update, {})
        except Exception:
            log.exception("telegram update %s could not be transformed", update.get("update_id"))
            return Ignored("the update could not be processed")

    def _describe(self, exc: Exception) -> str:
        token = self.settings.telegram_bot_token
        return redact(f"{type(exc).__name__}: {exc}", token.get_secret_value() if token else None)

    def warm_up(self) -> None:
        """Start fetching the bot's @username in the background (at web start-up)."""
        self._username.get("self")

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait for background look-ups to finish (tests, warm-up)."""
        return self._username.wait_idle(timeout)

    def _bot_username(self) -> str | None:
        """The bot's @username from cache; None (and a background getMe) until it is known,
        so the webhook never waits on Telegram."""
        return self._username.get("self")

    def _fetch_username(self, _key: str) -> str | None:
        # failures are logged and retried later by the BackgroundLookup
        return str(self.api.get_me().get("username") or "") or None


def create_channel() -> TelegramChannel:
    """The Telegram channel from the environment. Raises `ChannelNotConfiguredError` without
    TELEGRAM_BOT_TOKEN and `ConfigurationError` for an invalid setting."""
    settings = read_settings(TelegramSettings)
    return TelegramChannel(settings)
