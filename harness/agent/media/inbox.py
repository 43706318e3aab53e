"""Where the files people send are kept: `inbox/<conversation>/` in the workspace.

Names are made safe here (no path separators, no dot files, nothing but letters, digits and
`._-`), prefixed with the message's event id so two files called `image.jpg` never collide and
a replayed download overwrites its own earlier copy instead of adding a second one. The bytes
are checked against what they claim to be before they are kept.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from pydantic import BaseModel

from harness.events import Attachment
from harness.workspace_files import UnsafePathError, write_replace

log = logging.getLogger(__name__)
INBOX = "inbox"
INBOX_LINKED = "the inbox folder is a link, which I never write through, so the file was not kept"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_IMAGE_MAGIC = {
    b"\xff\xd8\xff": "image/jpeg",
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}
_EXTENSIONS = {
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "audio/ogg": ".ogg",
    "audio/mpeg": ".mp3",
    "video/mp4": ".mp4",
    "application/pdf": ".pdf",
}


class InboxFile(BaseModel, frozen=True):
    """One attachment after its download step: kept at `path` (relative to the workspace), or
    `refused` with a reason meant for the person who sent it. `mime_type` is what the bytes
    turned out to be when that could be told, else what the platform claimed."""

    kind: str
    name: str
    path: str = ""
    mime_type: str = ""
    size: int = 0
    refused: str | None = None


def safe_name(name: str, fallback: str = "file") -> str:
    """`name` reduced to a harmless file name: its last path part, unsafe characters replaced
    by `_`, no leading dots, at most 100 characters (keeping the extension). Never empty."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _UNSAFE.sub("_", base).lstrip(".")[-100:].strip("_")
    return cleaned or fallback


def inbox_folder(workspace: Path, session_key: str) -> Path:
    """The folder for one conversation's files (not created): the session key with anything
    but letters, digits and `._-` replaced, so it is always one folder under `inbox/`."""
    return workspace / INBOX / (_UNSAFE.sub("_", session_key).strip("._") or "conversation")


def sniff(content: bytes) -> str | None:
    """The image type the bytes start with (JPEG, PNG, GIF, WebP), or None."""
    for magic, mime in _IMAGE_MAGIC.items():
        if content.startswith(magic):
            return mime
    if content[:4] == b"RIFF" and content[8:12] == b"WEBP":
        return "image/webp"
    return None


def content_problem(attachment: Attachment, content: bytes, served_type: str) -> str | None:
    """Why the downloaded bytes are not the file the message announced, or None. A web page
    served for a file is the usual sign of a missing permission (Slack answers a bot without
    `files:read` with its login page)."""
    served = served_type.split(";", 1)[0].strip().lower()
    if served == "text/html" and not attachment.mime_type.startswith("text/html"):
        return (
            "the platform sent a web page instead of the file (is the bot allowed to read files?)"
        )
    if attachment.kind == "photo" and sniff(content) is None:
        return "the photo is not an image I can read (JPEG, PNG, GIF or WebP)"
    return None


def store(
    workspace: Path,
    session_key: str,
    event_id: str,
    index: int,
    attachment: Attachment,
    content: bytes,
    served_type: str,
) -> InboxFile:
    """Check and keep one downloaded attachment; idempotent (the same arguments write the same
    file). Returns a refused `InboxFile` when `content_problem` finds one, or when the inbox
    (or the file's name in it) is a link: nothing is written through a link
    (`harness.workspace_files`). Raises `OSError` when the workspace cannot be written."""
    problem = content_problem(attachment, content, served_type)
    mime = sniff(content) or attachment.mime_type or served_type.split(";", 1)[0].strip()
    shown = attachment.name or f"{attachment.kind}"
    if problem is not None:
        return InboxFile(kind=attachment.kind, name=shown, refused=problem)
    name = safe_name(attachment.name or f"{attachment.kind}{_EXTENSIONS.get(mime, '')}")
    folder = inbox_folder(workspace, session_key)
    target = (folder / f"{safe_name(event_id, 'message')}-{index}-{name}").relative_to(workspace)
    try:
        write_replace(workspace, target, content)
    except UnsafePathError as exc:
        log.warning("attachment %s not kept: %s", target.as_posix(), exc)
        return InboxFile(kind=attachment.kind, name=shown, refused=INBOX_LINKED)
    return InboxFile(
        kind=attachment.kind,
        name=shown,
        path=target.as_posix(),
        mime_type=mime,
        size=len(content),
    )
