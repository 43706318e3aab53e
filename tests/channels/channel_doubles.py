"""Stand-ins around the real channels for the delivery tests: install a channel as the only
platform `send-reply` reaches, or wrap one so that the test acts at the moment the platform
accepted a chunk (a flaky network, a worker killed before it recorded the chunk)."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

from channels import registry as channel_registry
from channels.base import Channel, ChunkSent
from channels.handlers import FUNCTIONS
from channels.telegram.channel import TelegramChannel
from harness.agent.arrival import arrive
from harness.events import MESSAGE_HANDLER, MESSAGE_RECEIVED, Destination, MessageReceived
from harness.runtime import Context, Runtime, event, function, set_runtime
from harness.runtime.functions import FunctionRegistry


def arriving_turn(registry: FunctionRegistry) -> None:
    """Register on `registry` a stand-in for the agent's turn that only arrives as the real
    one does first (`harness.agent.arrival`: the chat's undelivered replies again, the
    acknowledgement) and ends."""

    @function(id=MESSAGE_HANDLER, trigger=event(MESSAGE_RECEIVED), registry=registry)
    def turn(ctx: Context) -> None:
        arrive(ctx, MessageReceived.from_event(ctx.event), "pairing")


def use_channels(**channels: Channel) -> None:
    """Make `channels` the only ones registered, each under its keyword (`telegram=...`)."""
    channel_registry.reset()
    for name, channel in channels.items():
        channel_registry.register(name, lambda channel=channel: channel)


def channel_bus(
    runtime: Runtime, registry: FunctionRegistry, **channels: Channel
) -> Iterator[Runtime]:
    """For a fixture to `yield from`: the channel functions registered on `runtime`, which is
    installed process-wide, with `channels` as the only platforms; all undone afterwards."""
    for fn in FUNCTIONS:
        registry.register(fn)
    runtime.register_functions()
    set_runtime(runtime)
    use_channels(**channels)
    yield runtime
    set_runtime(None)
    channel_registry.reset()


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
