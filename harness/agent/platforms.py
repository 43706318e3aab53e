"""What a chat turn needs from the chat platforms, without knowing any of them.

The agent shows a person their message arrived, draws a streamed draft of its answer and
fetches the files people send through this seam; the process that assembles the fleet plugs
the channels in (`install`, called by `harness.composition.plug_in_channels` in the worker
and web processes). With nothing installed (the terminal chat, `harness chat`), nothing is
acknowledged, there is no draft and files cannot be fetched.
`harness.agent` never imports `channels` (tests/test_import_graph.py holds it to that).

    platforms = installed()
    draft = platforms.open_draft(runtime, run_id, reply, stream_default=True) if platforms else None
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from harness.errors import HarnessError
from harness.events import Attachment, ReplyTarget

if TYPE_CHECKING:
    from harness.runtime import Runtime


class Draft(Protocol):
    """One turn's draft on its chat platform (a `live_text.DraftSink` that can be closed)."""

    def show(self, text: str) -> None:
        """Show `text` instead of whatever was shown. Must not block or raise."""
        ...

    def close(self, *, interrupted: bool = False) -> None:
        """End the draft; with `interrupted`, leave it marked as cut short. Idempotent; must
        not raise."""
        ...


@dataclass(frozen=True)
class Fetched:
    """A file fetched from the platform: its bytes and the content type it was served with."""

    content: bytes
    content_type: str


Refusal = Literal["unsupported", "too_large", "refused"]


class FileRefused(HarnessError):
    """The platform will not give the file, now or later: `kind` is `unsupported` (the channel
    cannot fetch files), `too_large` (over the limit asked for) or `refused` (the platform
    said no; `description` is its reason, credentials already redacted)."""

    def __init__(self, kind: Refusal, description: str = "") -> None:
        super().__init__(f"file refused ({kind}){': ' + description if description else ''}")
        self.kind = kind
        self.description = description


class ChatPlatforms(Protocol):
    """The chat platforms, as the agent sees them."""

    def acknowledge(
        self, runtime: Runtime, run_id: str, reply: ReplyTarget, *, keep_alive: bool
    ) -> bool:
        """Show the person the message `reply` answers arrived (typing, a reaction), soon and
        off the caller's thread; with `keep_alive`, an acknowledgement that fades is repeated
        while run `run_id` is live in `runtime`'s ledger (once per run in a process, however
        often asked). False when `reply`'s channel is not a platform here. Never raises,
        never waits on the platform."""
        ...

    def open_draft(
        self, runtime: Runtime, run_id: str, reply: ReplyTarget, stream_default: bool
    ) -> Draft | None:
        """Start the draft of run `run_id`'s answer where `reply` goes, or None when that
        channel does not stream replies (its own setting, else `stream_default`)."""
        ...

    def fetch(self, channel: str, attachment: Attachment, max_bytes: int) -> Fetched:
        """Download one attachment of a message `channel` published. Raises `FileRefused`
        when trying again cannot help; any other exception is worth a retry."""
        ...


_installed: ChatPlatforms | None = None


def install(platforms: ChatPlatforms | None) -> None:
    """Make `platforms` what chat turns use from now on (None: no platform)."""
    global _installed
    _installed = platforms


def installed() -> ChatPlatforms | None:
    """The installed chat platforms, or None."""
    return _installed
