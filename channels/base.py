"""The contract every chat platform implements, and the values that cross it.

A channel is used in three places: the web route that receives a platform's webhook
(`verify`, then `transform`), the bus step that posts a reply (`send_reply`), and around a
turn (`acknowledge`, from the acknowledgement keeper's threads; `complete`, once the reply is
posted). All methods are synchronous and thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, TypeGuard, runtime_checkable

from harness.events import Attachment, Destination, Event
from harness.protocol_checks import conforms


@dataclass(frozen=True)
class Publish:
    """The webhook carried a message that starts a turn: publish `event` (its id is stable
    across duplicate deliveries, so publishing twice is harmless), then answer 200."""

    event: Event


@dataclass(frozen=True)
class Ignored:
    """The webhook carried nothing to act on. Answer 200 so the platform does not retry;
    `reason` is for the log."""

    reason: str


@dataclass(frozen=True)
class Respond:
    """Answer the webhook with this JSON body instead of publishing (Slack's url_verification)."""

    body: dict[str, Any] = field(default_factory=dict)


Inbound: TypeAlias = Publish | Ignored | Respond
"""What a webhook payload turns into."""

ChunkSent: TypeAlias = Callable[[int, str], None]
"""Called with (chunk index, platform message id) right after each chunk is posted."""


@runtime_checkable
class Channel(Protocol):
    """A chat platform. Implementations live in `channels/<platform>/` and are created through
    `channels.registry`; nothing outside that folder knows a platform's details."""

    @property
    def name(self) -> str:
        """The registry name, also the `channel` field of the events this channel publishes."""
        ...

    def verify(self, headers: Mapping[str, str], body: bytes) -> None:
        """Check that a webhook request comes from the platform, before its body is parsed.

        `headers` may use any letter case. Raises `WebhookRejected` (status 401) on a missing,
        wrong or stale signature or secret. Must not touch the network.
        """
        ...

    def transform(self, payload: Mapping[str, Any], headers: Mapping[str, str]) -> Inbound:
        """Turn a verified webhook payload into what to do with it. Never raises for payloads
        the platform may legitimately send: anything not understood is `Ignored` with a reason.
        """
        ...

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
        """Format `response` (Markdown from the model), split it into the platform's message
        size and post the chunks in order; return the platform ids of the chunks posted by this
        call.

        Splitting is deterministic, so chunk indexes are stable across retries of the same
        reply (`reply_key` names it in logs). Chunks whose index is in `skip_chunks` are not
        posted; `on_chunk_sent(index, id)` runs after each post, before the next one, so a
        caller that records it can retry after a failure without double-posting. An empty or
        blank response posts nothing. Raises a `PlatformError` on the first chunk that fails.
        """
        ...

    def acknowledge(self, destination: Destination, channel_meta: Mapping[str, Any]) -> None:
        """Show the user the message was received (typing indicator, reaction). Best effort:
        never raises."""
        ...

    def complete(self, destination: Destination, channel_meta: Mapping[str, Any]) -> None:
        """Show the user the turn is finished, undoing `acknowledge` where the platform needs
        it. Best effort: never raises. May do nothing."""
        ...

    def setup(self) -> str:
        """Register the channel with the platform (or explain how to) and return a short
        human-readable report. Raises `ChannelNotConfiguredError` or a `PlatformError`."""
        ...


@runtime_checkable
class PollingChannel(Channel, Protocol):
    """A channel that can also fetch messages itself, for when no public webhook URL exists."""

    @property
    def polling(self) -> bool:
        """True when configured to poll: run a loop over `poll` instead of serving a webhook."""
        ...

    def poll(self, timeout: float = 30.0) -> list[Inbound]:
        """Wait up to `timeout` seconds for new messages and return them transformed (an empty
        list on timeout). Each call confirms the previous call's messages; unconfirmed ones are
        delivered again with the same event ids. Raises a `PlatformError`."""
        ...


@dataclass(frozen=True)
class PollBatch:
    """What one poll fetched: the messages, transformed, and the cursor to poll from next.
    Polling from `cursor` confirms these messages to the platform; until then a poll from the
    previous cursor delivers them again, with the same event ids."""

    inbound: list[Inbound]
    cursor: str | None


@runtime_checkable
class ResumablePollingChannel(PollingChannel, Protocol):
    """A polling channel whose caller keeps the cursor (in Redis), so that a restarted poller
    resumes where the last one confirmed, never past a batch it did not publish."""

    def poll_from(self, cursor: str | None, timeout: float = 30.0) -> PollBatch:
        """Wait up to `timeout` seconds for messages after `cursor` (None: the oldest the
        platform still holds) and return them with the next cursor (the same one when nothing
        came). Keeps no cursor of its own. Raises a `PlatformError`."""
        ...


@runtime_checkable
class RefreshingChannel(Channel, Protocol):
    """A channel whose acknowledgement fades by itself (Telegram's typing indicator lasts about
    five seconds), so `acknowledge` must be repeated until the reply is out."""

    @property
    def acknowledge_every(self) -> float:
        """Seconds between the starts of two `acknowledge` calls while a turn is in progress:
        a little under `acknowledge_lasts`, the margin covering the call's own time."""
        ...

    @property
    def acknowledge_lasts(self) -> float:
        """Seconds one `acknowledge` shows for; a repeat already this late is not worth
        sending (`channels.keeper`)."""
        ...


@runtime_checkable
class RecoveringChannel(Channel, Protocol):
    """A channel that tags each chunk it posts with the reply's key and can find those chunks
    again, so a delivery whose record was lost (a crash between the platform's answer and our
    write) does not post them twice."""

    def find_posted(
        self,
        response: str,
        destination: Destination,
        channel_meta: Mapping[str, Any],
        reply_key: str,
    ) -> dict[int, str]:
        """Chunk index -> platform message id of the chunks of reply `reply_key` already in
        `destination` (looking at its recent messages only). Raises a `PlatformError`."""
        ...


def refreshing(channel: Channel) -> TypeGuard[RefreshingChannel]:
    """Whether `channel` is a `RefreshingChannel` (`conforms`: decided once per class)."""
    return conforms(channel, RefreshingChannel)


def recovering(channel: Channel) -> TypeGuard[RecoveringChannel]:
    """Whether `channel` is a `RecoveringChannel` (`conforms`: decided once per class)."""
    return conforms(channel, RecoveringChannel)


@dataclass(frozen=True)
class Download:
    """A fetched file: its bytes and the content type the platform served it with."""

    content: bytes
    content_type: str


@runtime_checkable
class FileChannel(Channel, Protocol):
    """A channel that can fetch the files people send and post files back."""

    def download(self, attachment: Attachment, max_bytes: int) -> Download:
        """Fetch one attachment of a message this channel published. Raises `FileTooLarge`
        as soon as more than `max_bytes` arrive (or the platform says the file is larger),
        `TransientPlatformError` when worth retrying, another `PlatformError` otherwise."""
        ...

    def send_file(
        self,
        content: bytes,
        name: str,
        mime_type: str,
        caption: str,
        destination: Destination,
        channel_meta: Mapping[str, Any],
    ) -> str:
        """Post one file (an image as a photo where the platform shows photos) with an
        optional plain-text `caption`; return the platform's id of what was posted. Raises a
        `PlatformError`. Not idempotent: callers record the id to avoid posting twice."""
        ...


def header(headers: Mapping[str, str], name: str) -> str | None:
    """Look up an HTTP header by name in any letter case; None when absent."""
    value = headers.get(name)
    if value is not None:
        return value
    wanted = name.lower()
    for key, candidate in headers.items():
        if key.lower() == wanted:
            return candidate
    return None


def parse_allowlist(raw: object) -> frozenset[str]:
    """Read an allowlist setting: a comma- or whitespace-separated string, or a list. Blank
    entries are dropped; an empty result means "allow everyone"."""
    if raw is None:
        return frozenset()
    if isinstance(raw, list | tuple | set | frozenset):
        items = [str(item) for item in raw]
    else:
        items = str(raw).replace(",", " ").split()
    return frozenset(item.strip() for item in items if item.strip())


@runtime_checkable
class CommandChannel(Protocol):
    """A channel whose chat commands come to their own route (`POST /webhooks/{channel}/
    commands`: Slack's slash commands), verified with the channel's `verify` and acknowledged
    at once with an empty 200; the answer is posted like any reply."""

    def transform_command(self, body: bytes, headers: Mapping[str, str]) -> Inbound:
        """Turn a verified command request body into what to do with it. Never raises for
        payloads the platform may send: anything not understood is `Ignored`."""
        ...
