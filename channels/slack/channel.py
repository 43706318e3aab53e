"""The Slack channel: signed Events API webhooks in, threaded mrkdwn replies out."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from channels.base import ChunkSent, Download, Ignored, Inbound
from channels.errors import ChannelNotConfiguredError, PlatformError, refuse_oversized
from channels.lookup import BackgroundLookup
from channels.slack.api import SlackApi
from channels.slack.approvals import (
    parse_interaction,
    request_blocks,
    request_text,
    transform_interaction,
)
from channels.slack.commands import parse_command_form, transform_command
from channels.slack.format import to_chunks
from channels.slack.meta import SlackMeta
from channels.slack.settings import SlackSettings
from channels.slack.setup import set_up
from channels.slack.transform import CHANNEL, transform_payload
from channels.slack.verify import verify_signature
from harness.events import ApprovalRequested, Attachment, Destination
from harness.settings_errors import read_settings

log = logging.getLogger(__name__)

DELIVERY_EVENT = "harness_delivery"
"""The metadata event type of every reply chunk we post."""


def delivery_metadata(reply_key: str, index: int) -> dict[str, Any]:
    """The message metadata of chunk `index` of reply `reply_key`."""
    return {
        "event_type": DELIVERY_EVENT,
        "event_payload": {"delivery_id": reply_key, "chunk": index},
    }


ACK_REACTION = "eyes"
DONE_REACTION = "white_check_mark"


class SlackChannel:
    """Slack through the Events API and Web API. Implements `channels.base.Channel`.
    Thread-safe."""

    name = CHANNEL

    def __init__(
        self,
        settings: SlackSettings,
        api: SlackApi | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if settings.slack_bot_token is None:
            raise ChannelNotConfiguredError("SLACK_BOT_TOKEN is not set")
        self.settings = settings
        self.api = api or SlackApi(
            settings.slack_bot_token.get_secret_value(), settings.slack_api_base_url
        )
        self._clock = clock
        self._names = BackgroundLookup(self.api.display_name, name="slack users.info")
        self._bot = BackgroundLookup(lambda _: self.api.bot_user_id(), name="slack auth.test")

    def verify(self, headers: Mapping[str, str], body: bytes) -> None:
        """Check the v0 signature and its timestamp; raises `WebhookRejected(401)`."""
        secret = self.settings.slack_signing_secret
        verify_signature(
            headers, body, secret.get_secret_value() if secret else None, now=self._clock
        )

    def transform(self, payload: Mapping[str, Any], headers: Mapping[str, str]) -> Inbound:
        """See `channels.slack.transform.transform_payload`. Retries (X-Slack-Retry-Num) give
        the same event id as the first delivery, so they are deduplicated, not dropped."""
        return transform_payload(
            payload,
            bot_user_id=self._bot_user_id,
            display_name=self._display_name,
            allowed_channels=self.settings.slack_allowed_channels,
            drop_unlisted=self.settings.dm_policy == "allowlist",
        )

    def transform_interaction(self, body: bytes, headers: Mapping[str, str]) -> Inbound:
        """A verified interactivity request (form-encoded) as what to do with it; see
        `channels.slack.approvals.transform_interaction`. Never raises."""
        payload = parse_interaction(body)
        if payload is None:
            return Ignored("interaction without a JSON payload")
        return self.transform_interaction_payload(payload)

    def transform_interaction_payload(self, payload: Mapping[str, Any]) -> Inbound:
        """An interaction's JSON payload (from the HTTP route, or a Socket Mode `interactive`
        envelope) as what to do with it. Never raises."""
        return transform_interaction(payload, self.settings.slack_allowed_channels)

    def transform_command(self, body: bytes, headers: Mapping[str, str]) -> Inbound:
        """A verified slash command request (form-encoded) as what to do with it; see
        `channels.slack.commands`. Never raises."""
        return self.transform_command_payload(parse_command_form(body))

    def transform_command_payload(self, payload: Mapping[str, Any]) -> Inbound:
        """A slash command's fields (from the HTTP route, or a Socket Mode `slash_commands`
        envelope) as what to do with it. Never raises."""
        return transform_command(
            payload,
            display_name=self._display_name,
            allowed_channels=self.settings.slack_allowed_channels,
            drop_unlisted=self.settings.dm_policy == "allowlist",
        )

    def request_text(self, request: ApprovalRequested) -> str:
        """The request as posted (see `channels.slack.approvals.request_text`)."""
        return request_text(request.tool, request.summary, request.timeout)

    def ask_approval(self, request: ApprovalRequested) -> str:
        """Post the request with its buttons in the conversation's thread."""
        target = request.reply.destination
        text = self.request_text(request)
        blocks = request_blocks(text, request.approval_id)
        return self.api.post_blocks(target.chat_id, text, blocks, thread_ts=target.thread_id)

    def settle_approval(
        self,
        destination: Destination,
        channel_meta: Mapping[str, Any],
        notice: str,
        outcome: str | None,
    ) -> None:
        """Rewrite the request to show `outcome` (removing the buttons), or tell the presser
        `notice` alone (an ephemeral message). Never raises."""
        try:
            pressed = SlackMeta.of(channel_meta)
            if outcome is not None and destination.message_id is not None:
                text = f"{pressed.request_text or ''}\n\n{outcome}".strip()
                self.api.update_message(destination.chat_id, destination.message_id, text)
            elif pressed.user:
                self.api.post_ephemeral(
                    destination.chat_id, pressed.user, notice, thread_ts=pressed.thread_ts or None
                )
        except PlatformError as exc:
            log.warning("slack: could not settle an approval: %s", exc)

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
        """Post `response` as mrkdwn messages in the destination's thread (see
        `Channel.send_reply`); returns the posted messages' ts. Each message carries metadata
        naming the reply and the chunk (`find_posted`)."""
        sent: list[str] = []
        for index, chunk in enumerate(to_chunks(response)):
            if index in skip_chunks:
                continue
            ts = self.api.post_message(
                destination.chat_id,
                chunk,
                thread_ts=destination.thread_id,
                metadata=delivery_metadata(reply_key, index),
            )
            log.debug("slack reply %s chunk %d posted as %s", reply_key, index, ts)
            sent.append(ts)
            if on_chunk_sent is not None:
                on_chunk_sent(index, ts)
        return sent

    def find_posted(
        self,
        response: str,
        destination: Destination,
        channel_meta: Mapping[str, Any],
        reply_key: str,
    ) -> dict[int, str]:
        """The chunks of reply `reply_key` already in the destination's thread (or its
        channel's latest messages), found by their metadata (`channels.base.RecoveringChannel`)."""
        found: dict[int, str] = {}
        tagged = self.api.recent_metadata(
            destination.chat_id, thread_ts=destination.thread_id, event_type=DELIVERY_EVENT
        )
        for ts, payload in tagged:
            chunk = payload.get("chunk")
            if payload.get("delivery_id") == reply_key and isinstance(chunk, int):
                found.setdefault(chunk, ts)
        return found

    # -- streamed drafts (channels.drafts.DraftingChannel) ------------------------------
    @property
    def stream_replies(self) -> bool | None:
        """SLACK_STREAM_REPLIES; None follows STREAM_REPLIES."""
        return self.settings.slack_stream_replies

    def draft_interval(self, destination: Destination) -> float:
        """SLACK_DRAFT_EVERY, in every kind of conversation."""
        return self.settings.slack_draft_every

    def preview_draft(
        self, key: str, text: str, destination: Destination, channel_meta: Mapping[str, Any]
    ) -> bool:
        """Slack has no ephemeral previews: always False (drafts are posted and updated)."""
        return False

    def post_draft(
        self, text: str, destination: Destination, channel_meta: Mapping[str, Any]
    ) -> str:
        """Post the first message's worth of `text` in the thread; return its ts."""
        chunks = to_chunks(text)
        if not chunks:
            raise ValueError("a draft needs some text")
        return self.api.post_message(
            destination.chat_id, chunks[0], thread_ts=destination.thread_id
        )

    def edit_draft(
        self, message_id: str, text: str, destination: Destination, channel_meta: Mapping[str, Any]
    ) -> None:
        """Show the first message's worth of `text` in the draft."""
        chunks = to_chunks(text)
        if chunks:
            self.api.update_message(destination.chat_id, message_id, chunks[0])

    def finish_draft(
        self,
        message_id: str,
        response: str,
        destination: Destination,
        channel_meta: Mapping[str, Any],
    ) -> None:
        """Make the draft exactly the reply's first chunk (see `DraftingChannel`)."""
        self.edit_draft(message_id, response, destination, channel_meta)

    def download(self, attachment: Attachment, max_bytes: int) -> Download:
        """`url_private` with the bot token (see `channels.base.FileChannel.download`)."""
        refuse_oversized(CHANNEL, "download", attachment.size, max_bytes)
        content, content_type = self.api.download(attachment.ref, max_bytes)
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
        """Slack's external upload flow, shared in the destination's thread."""
        return self.api.upload_file(
            destination.chat_id, content, name, caption, thread_ts=destination.thread_id
        )

    def acknowledge(self, destination: Destination, channel_meta: Mapping[str, Any]) -> None:
        """React with :eyes: on the user's message. Never raises."""
        if destination.message_id is None:
            return
        try:
            self.api.add_reaction(destination.chat_id, destination.message_id, ACK_REACTION)
        except Exception as exc:  # best effort by contract
            log.warning("slack acknowledge reaction failed: %s", exc)

    def complete(self, destination: Destination, channel_meta: Mapping[str, Any]) -> None:
        """Replace :eyes: with :white_check_mark: on the user's message. Never raises."""
        if destination.message_id is None:
            return
        try:
            self.api.remove_reaction(destination.chat_id, destination.message_id, ACK_REACTION)
            self.api.add_reaction(destination.chat_id, destination.message_id, DONE_REACTION)
        except Exception as exc:  # best effort by contract
            log.warning("slack completion reaction failed: %s", exc)

    def setup(self) -> str:
        """See `channels.slack.setup.set_up`: checks the token and prints the app manifest."""
        return set_up(self.api, self.settings)

    def warm_up(self) -> None:
        """Start fetching the bot's user id in the background (at web start-up)."""
        self._bot.get("self")

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait for background look-ups to finish (tests, warm-up)."""
        return self._bot.wait_idle(timeout) and self._names.wait_idle(timeout)

    def _bot_user_id(self) -> str | None:
        # Events API payloads name the bot in `authorizations`; this is only the fallback,
        # answered from cache so the webhook never waits on auth.test.
        return self._bot.get("self")

    def _display_name(self, user_id: str) -> str:
        # From cache, or "" for a user's first message while users.info runs in the background.
        return self._names.get(user_id) or ""


def create_channel() -> SlackChannel:
    """The Slack channel from the environment. Raises `ChannelNotConfiguredError` without
    SLACK_BOT_TOKEN and `ConfigurationError` for an invalid setting."""
    settings = read_settings(SlackSettings)
    return SlackChannel(settings)
