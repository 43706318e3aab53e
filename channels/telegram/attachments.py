"""What files a Telegram message carries, and how to say the rest (a location, a contact) in
words, so that no message a person sends ends without a reply."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.events import Attachment

_FILE_KINDS = ("document", "audio", "voice", "video", "video_note", "sticker", "animation")
_DEFAULT_TYPES = {
    "photo": "image/jpeg",
    "voice": "audio/ogg",
    "video_note": "video/mp4",
    "sticker": "image/webp",
}


def attachments_of(message: Mapping[str, Any]) -> list[Attachment]:
    """The files of `message`: the largest size of a photo, and any document, audio, voice
    note, video, video note, sticker or animation. Never raises; malformed entries are skipped.
    An animation also arrives as a document, so it is listed once."""
    found: list[Attachment] = []
    sizes = message.get("photo")
    if isinstance(sizes, list) and sizes:
        largest = max(
            (s for s in sizes if isinstance(s, Mapping)),
            key=lambda s: int(s.get("width", 0)) * int(s.get("height", 0)),
            default=None,
        )
        if largest is not None and largest.get("file_id"):
            found.append(_attachment("photo", largest, f"photo-{message.get('message_id', 0)}.jpg"))
    for kind in _FILE_KINDS:
        item = message.get(kind)
        if kind == "document" and "animation" in message:
            continue
        if isinstance(item, Mapping) and item.get("file_id"):
            found.append(_attachment(kind, item, ""))
    return found


def _attachment(kind: str, item: Mapping[str, Any], default_name: str) -> Attachment:
    size = item.get("file_size")
    return Attachment(
        kind=kind,
        ref=str(item["file_id"]),
        name=str(item.get("file_name") or default_name),
        mime_type=str(item.get("mime_type") or _DEFAULT_TYPES.get(kind, "")),
        size=size if isinstance(size, int) else None,
    )


def describe_other(message: Mapping[str, Any]) -> str | None:
    """A sentence for content that has no file and no text (location, venue, contact, poll,
    dice), or None when `message` has none of these."""
    if isinstance(message.get("venue"), Mapping):
        venue = message["venue"]
        return f"(shared a place: {venue.get('title', '')}, {venue.get('address', '')})"
    if isinstance(message.get("location"), Mapping):
        where = message["location"]
        return f"(shared a location: {where.get('latitude')}, {where.get('longitude')})"
    if isinstance(message.get("contact"), Mapping):
        contact = message["contact"]
        name = " ".join(str(contact.get(k) or "") for k in ("first_name", "last_name")).strip()
        return f"(shared a contact: {name} {contact.get('phone_number', '')})".replace(" )", ")")
    if isinstance(message.get("poll"), Mapping):
        poll = message["poll"]
        options = ", ".join(str(o.get("text", "")) for o in poll.get("options") or [])
        return f"(sent a poll: {poll.get('question', '')} [{options}])"
    if isinstance(message.get("dice"), Mapping):
        dice = message["dice"]
        return f"(rolled {dice.get('emoji', '🎲')}: {dice.get('value')})"
    return None
