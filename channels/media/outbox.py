"""Posting a file the agent sends (`agent.file.ready`), once across retries.

Called by `send-reply` (`channels.delivery`), so a chat's files and replies go out through
one ordered queue, in the order the agent produced them. The file is read from the
workspace path the agent checked; the platform id of the post is recorded in the same
delivery log as reply chunks (index 0 of the event), right after the post, so a retry after
a crash between post and step result does not post it again.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from channels.base import FileChannel
from channels.registry import channel_or_none
from harness.errors import ConfigurationError, NonRetriableError
from harness.events import FileReady
from harness.workspace_files import UnsafePathError, read_bytes, relative_in

if TYPE_CHECKING:
    from channels.delivery import DeliveryLog

log = logging.getLogger(__name__)


def post_file(delivery: DeliveryLog, data: FileReady) -> str:
    """Post the file of `data` unless `delivery` already records it; the platform's id of
    the post. Raises `ConfigurationError` when the channel cannot send files,
    `NonRetriableError` when the file is not a plain file of the workspace, and the
    channel's errors (transient or `PermanentPlatformError`) as they are."""
    channel = channel_or_none(data.channel)
    if not isinstance(channel, FileChannel):
        raise ConfigurationError(f"channel {data.channel!r} cannot send files")
    already = delivery.posted()
    if 0 in already:
        log.info("file %s already posted as %s", delivery.reply_id, already[0])
        return already[0]
    content = _read(data)
    posted = channel.send_file(
        content,
        data.name,
        data.mime_type,
        data.caption,
        data.destination,
        data.channel_meta.platform,
    )
    delivery.record(0, posted)
    return posted


def _read(data: FileReady) -> bytes:
    """The file's bytes, read without following a link anywhere on its path: the agent's
    check resolved it fully (it holds no link), but a link to a secret could have been swapped
    in since (`harness.workspace_files`)."""
    root = Path("/")
    try:
        return read_bytes(root, relative_in(root, Path(data.path)))
    except UnsafePathError as exc:
        log.warning("file %s not sent: %s", data.name, exc)
        raise NonRetriableError(f"file {data.name} not sent: {exc}") from exc
