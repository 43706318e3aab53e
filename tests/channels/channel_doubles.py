"""Stand-ins around the real channels for the delivery tests: install a channel as the only
platform `send-reply` reaches, or wrap one so that the test acts at the moment the platform
accepted a chunk (a flaky network, a worker killed before it recorded the chunk)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from channels import registry as channel_registry
from channels.base import Channel, ChunkSent
from channels.telegram.channel import TelegramChannel
from harness.events import Destination


def use_channel(name: str, channel: Channel) -> None:
    """Make `channel` the only one registered, under `name`."""
    channel_registry.reset()
    channel_registry.register(name, lambda: channel)


class AfterChunkPosted:
    """The real Telegram channel, except that `chunk_posted` runs each time the platform
    accepted a chunk, in place of recording it; a subclass decides what happens then."""

    def __init__(self, channel: TelegramChannel) -> None:
        self._channel = channel

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)

    def chunk_posted(
        self, reply_key: str, index: int, message_id: str, record: ChunkSent | None
    ) -> None:
        """Called once the platform accepted chunk `index`; `record` records it as posted.
        By default only records it."""
        if record is not None:
            record(index, message_id)

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
        """The real channel's `send_reply`, with `chunk_posted` after each posted chunk."""

        def sent(index: int, message_id: str) -> None:
            self.chunk_posted(reply_key, index, message_id, on_chunk_sent)

        return self._channel.send_reply(
            response,
            destination,
            channel_meta,
            reply_key,
            skip_chunks=skip_chunks,
            on_chunk_sent=sent,
        )
