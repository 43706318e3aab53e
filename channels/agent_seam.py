"""The channels as a chat turn sees them (`harness.agent.platforms.ChatPlatforms`): a message's
acknowledgement kept by the process's `AcknowledgementKeeper`, drafts drawn by a
`DraftWriter`, files fetched through a `FileChannel`. Installed by the process
that assembles the fleet (`harness.composition.plug_in_channels`), never on import."""

from __future__ import annotations

from collections.abc import Callable

from channels.acknowledge import acknowledge
from channels.base import Channel, FileChannel
from channels.draft_writer import DraftWriter
from channels.drafts import DraftLog, drafting, streams_replies
from channels.errors import FileTooLarge, PlatformError, TransientPlatformError
from channels.keeper import AcknowledgementKeeper, process_keeper
from harness.agent.platforms import Fetched, FileRefused
from harness.events import Attachment, ReplyTarget
from harness.runtime import Runtime


class ChannelPlatforms:
    """`ChatPlatforms` over the registered channels (`lookup` is `channel_or_none`), whose
    acknowledgements `keeper` keeps (by default the process's, `process_keeper`)."""

    def __init__(
        self,
        lookup: Callable[[str], Channel | None],
        keeper: AcknowledgementKeeper | None = None,
    ) -> None:
        self._lookup = lookup
        self._keeper = keeper

    def acknowledge(
        self, runtime: Runtime, run_id: str, reply: ReplyTarget, *, keep_alive: bool
    ) -> bool:
        """The reply's channel acknowledges the message (`channels.acknowledge`); False when
        no such channel is registered."""
        channel = self._lookup(reply.channel)
        if channel is None:
            return False
        keeper = self._keeper or process_keeper()
        acknowledge(keeper, channel, runtime, run_id, reply, keep_alive=keep_alive)
        return True

    def open_draft(
        self, runtime: Runtime, run_id: str, reply: ReplyTarget, stream_default: bool
    ) -> DraftWriter | None:
        """A `DraftWriter` for the reply's channel when it streams replies, else None."""
        channel = self._lookup(reply.channel)
        if not drafting(channel) or not streams_replies(channel, stream_default):
            return None
        drafts = DraftLog(runtime, run_id)
        return DraftWriter(channel, reply.destination, reply.channel_meta.platform, drafts)

    def fetch(self, channel: str, attachment: Attachment, max_bytes: int) -> Fetched:
        """The attachment's bytes; platform refusals become `FileRefused`, transient
        failures (`TransientPlatformError`) are raised as they are."""
        found = self._lookup(channel)
        if not isinstance(found, FileChannel):
            raise FileRefused("unsupported")
        try:
            download = found.download(attachment, max_bytes)
        except FileTooLarge:
            raise FileRefused("too_large") from None
        except TransientPlatformError:
            raise
        except PlatformError as exc:
            raise FileRefused("refused", exc.description) from None
        return Fetched(download.content, download.content_type)
