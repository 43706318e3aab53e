"""Keeping the files people send: safe names, one folder per conversation, content checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agent.media.inbox import safe_name, store
from harness.events import Attachment

PNG_HEADER = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../../etc/passwd", "passwd"),
        ("..\\..\\boot.ini", "boot.ini"),
        (".env", "env"),
        ("my receipt (1).jpg", "my_receipt_1_.jpg"),
        ("", "file"),
        ("///", "file"),
    ],
)
def test_safe_name_never_leaves_the_folder_or_hides_the_file(name: str, expected: str) -> None:
    assert safe_name(name) == expected


def test_store_keeps_the_file_in_the_conversation_inbox(tmp_path: Path) -> None:
    # Given a document whose name tries to climb out of the inbox
    attachment = Attachment(kind="document", ref="x", name="../../SOUL.md", mime_type="text/plain")
    # When it is stored
    kept = store(tmp_path, "telegram-1/2", "telegram-9-10", 0, attachment, b"hello", "text/plain")
    # Then it lies under inbox/<conversation>/ with a safe, unique name
    assert kept.refused is None
    assert kept.path == "inbox/telegram-1_2/telegram-9-10-0-SOUL.md"
    assert (tmp_path / kept.path).read_bytes() == b"hello"
    assert not (tmp_path / "SOUL.md").exists()


def test_store_refuses_a_web_page_served_for_a_file(tmp_path: Path) -> None:
    # Given Slack answering a bot without files:read with its sign-in page
    attachment = Attachment(kind="document", ref="x", name="a.pdf", mime_type="application/pdf")
    # When it is stored
    kept = store(tmp_path, "slack-D1", "e", 0, attachment, b"<html>", "text/html; charset=utf-8")
    # Then nothing is kept and the reason says why
    assert kept.refused is not None and "web page" in kept.refused
    assert not (tmp_path / "inbox").exists()


def test_store_refuses_a_photo_that_is_not_an_image(tmp_path: Path) -> None:
    attachment = Attachment(kind="photo", ref="x", mime_type="image/jpeg")

    kept = store(tmp_path, "c", "e", 0, attachment, b"MZ\x90\x00 not an image", "image/jpeg")

    assert kept.refused is not None and "not an image" in kept.refused


def test_store_trusts_the_bytes_over_the_claimed_type(tmp_path: Path) -> None:
    attachment = Attachment(kind="photo", ref="x", mime_type="image/jpeg")

    kept = store(tmp_path, "c", "e", 0, attachment, PNG_HEADER, "application/octet-stream")

    assert kept.mime_type == "image/png"
    assert kept.path.endswith(".png")
