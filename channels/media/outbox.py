"""`send-file`: post `agent.file.ready` on its channel, once across retries.

The file is read from the workspace path the agent checked; the platform id of the post is
recorded in the same delivery log as reply chunks (index 0 of the event), right after the
post, so a retry after a crash between post and step result does not post it again.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from channels.base import FileChannel
from channels.delivery import DeliveryLog
from channels.registry import channel_or_none
from harness.errors import ConfigurationError
from harness.events import FILE_READY, FileReady
from harness.runtime import Context, Runtime, event, function

log = logging.getLogger(__name__)

SEND_FILE = "send-file"


@function(id=SEND_FILE, trigger=event(FILE_READY), retries=3)
def send_file(ctx: Context) -> dict[str, Any]:
    """Post the file of `agent.file.ready` to its conversation; idempotent per event.
    Transient platform errors are retried, permanent ones fail the run (the person then gets
    the failure notice). Returns the platform's id of the post."""
    data = FileReady.from_event(ctx.event)
    if channel_or_none(data.channel) is None:
        return {"posted": None}
    posted = ctx.step.run("post", _post, ctx.runtime, ctx.event.id, data)
    return {"posted": posted}


def _post(runtime: Runtime, file_id: str, data: FileReady) -> str:
    channel = channel_or_none(data.channel)
    if not isinstance(channel, FileChannel):
        raise ConfigurationError(f"channel {data.channel!r} cannot send files")
    delivery = DeliveryLog(runtime, file_id)
    already = delivery.posted()
    if 0 in already:
        log.info("file %s already posted as %s", file_id, already[0])
        return already[0]
    content = Path(data.path).read_bytes()
    posted = channel.send_file(
        content, data.name, data.mime_type, data.caption, data.destination, data.channel_meta
    )
    delivery.record(0, posted)
    return posted
