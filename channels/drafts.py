"""Streamed drafts: which channels draw the answer as it is written, and where its message is.

A channel that can show a growing draft implements `DraftingChannel`. While the agent's turn
runs, a `channels.draft_writer.DraftWriter` shows the draft as an ephemeral preview where the
platform offers one for the chat (`preview_draft`: Telegram's `sendMessageDraft` in private
chats; then the reply is posted as usual, and the preview goes), else posts the draft once
and edits it as text arrives; `send-reply` then finishes that same message with the exact
final text (`finish_draft`) and posts any further chunks as new messages.

The draft's platform message id is kept durably per run (`DraftLog`, in the runtime's draft
records, apart from the delivery records of replies) before anything else happens to it, so a
retried or resumed run edits the draft it already posted instead of posting a second one, and
the final delivery finds it from any worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeGuard, runtime_checkable

from channels.base import Channel
from harness.events import Destination
from harness.protocol_checks import conforms
from harness.records.stores import Records, redis_drafts
from harness.runtime import Runtime


@runtime_checkable
class DraftingChannel(Channel, Protocol):
    """A channel whose replies can be streamed as one message edited in place."""

    def draft_interval(self, destination: Destination) -> float:
        """Least seconds between two edits of a draft in `destination` (the platform's rate
        limit for that kind of chat)."""
        ...

    @property
    def stream_replies(self) -> bool | None:
        """This channel's own STREAM_REPLIES setting; None follows the deployment's."""
        ...

    def preview_draft(
        self, key: str, text: str, destination: Destination, channel_meta: Mapping[str, Any]
    ) -> bool:
        """Show `text` as an ephemeral preview (not a message: nothing to finish or delete)
        identified by `key`, the same for every retry of the run; False when the platform
        offers no preview for this chat (then the writer posts and edits). Raises a
        `PlatformError` (`RateLimited` on 429)."""
        ...

    def post_draft(
        self, text: str, destination: Destination, channel_meta: Mapping[str, Any]
    ) -> str:
        """Post `text` (Markdown so far, possibly unbalanced) as a new draft message, rendered
        safely and cut to one message; return its platform id. Raises a `PlatformError`."""
        ...

    def edit_draft(
        self,
        message_id: str,
        text: str,
        destination: Destination,
        channel_meta: Mapping[str, Any],
    ) -> None:
        """Replace the draft's content with `text`, like `post_draft`. Editing to the text
        already shown is not an error. Raises a `PlatformError` (`RateLimited` on 429)."""
        ...

    def finish_draft(
        self,
        message_id: str,
        response: str,
        destination: Destination,
        channel_meta: Mapping[str, Any],
    ) -> None:
        """Make the draft exactly the first chunk `send_reply(response)` would post, formatted
        the same way. Idempotent. Raises a `PlatformError`."""
        ...


class DraftLog:
    """Where one run's draft is on the platform, and until when the platform wants it left
    alone, timed by the runtime's clock; `records` defaults to the runtime's Redis ones.
    Methods raise `BusUnavailableError` when Redis fails."""

    def __init__(self, runtime: Runtime, run_id: str, records: Records | None = None) -> None:
        self._runtime = runtime
        # only the draft store: building every store (`redis_records`) registers their
        # scripts, a cost the model gateway paid for each call it streams
        self._records = records.drafts if records is not None else redis_drafts(runtime)
        self._run_id = run_id
        self.key = f"draft:{run_id}"  # names the run's preview, the same at every retry

    def message_id(self) -> str | None:
        """The draft's platform message id, or None when the run has posted no draft."""
        return self._records.get(self._run_id).message_id

    def record(self, message_id: str) -> None:
        """Remember the draft's message id. Idempotent."""
        self._records.record_message(self._run_id, message_id)

    def hold(self, seconds: float) -> None:
        """The platform refuses another edit of the draft for `seconds` from now (its pace
        after our last edit, or a 429's `retry_after`)."""
        self._records.hold_until(self._run_id, self._runtime.now_ms() + int(seconds * 1000))

    def held_for(self) -> float:
        """Seconds left before the platform takes another edit of the draft (0 when none)."""
        until = self._records.get(self._run_id).quiet_until_ms
        return max(0.0, (until - self._runtime.now_ms()) / 1000)


def drafting(channel: Channel | None) -> TypeGuard[DraftingChannel]:
    """Whether `channel` is a `DraftingChannel` (`conforms`: decided once per class)."""
    return conforms(channel, DraftingChannel)


def streams_replies(channel: Channel, deployment_default: bool) -> bool:
    """True when replies on `channel` should be streamed as drafts: a `DraftingChannel` whose
    own setting, or else the deployment's STREAM_REPLIES, says so."""
    if not drafting(channel):
        return False
    own = channel.stream_replies
    return deployment_default if own is None else own
