"""Issue 26, findings 2 and 3, through the webhook: approval decides on the path a write
resolves to, and no fleet-side read or write follows a link out of the workspace."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from harness.runtime.testing import drain
from tests.channels import payloads
from tests.channels.approval_presses import TELEGRAM_HEADERS
from tests.fakes.model_server import Reply
from tests.security.conftest import Attack

HELPER = "x = 1\n"


def _spelling(attack: Attack, kind: str) -> str:
    """`functions/helper.py`, spelled another way."""
    (attack.workspace / "notes").mkdir(exist_ok=True)
    (attack.workspace / "fn").symlink_to("functions")
    return {
        "absolute": str(attack.workspace.resolve() / "functions" / "helper.py"),
        "dot-dot": "./notes/../functions/helper.py",
        "linked folder": "fn/helper.py",
    }[kind]


def _send(attack: Attack, update: dict[str, Any]) -> None:
    """Post any Telegram update through the webhook and run the bus (the bench's `say` only
    sends text)."""
    response = attack.client.post("/webhooks/telegram", json=update, headers=TELEGRAM_HEADERS)
    assert response.status_code == 200, response.text
    drain(attack.runtime)


def _outside(attack: Attack) -> Path:
    """A folder beside the workspace, with one file the attacker would like to change."""
    outside = attack.workspace.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "zz.pth").write_text("original\n")
    return outside


@pytest.mark.parametrize("kind", ["absolute", "dot-dot", "linked folder"])
def test_write_under_functions_asks_by_its_resolved_path(attack: Attack, kind: str) -> None:
    # Given the attacker's model writes functions/helper.py under another spelling
    path = _spelling(attack, kind)
    attack.model.script(Reply.tool("write", {"path": path, "content": HELPER}), Reply.answer("ok"))
    # When Alice asks for it
    attack.say("write the helper")
    # Then Alice is asked, about functions/helper.py, and nothing is written before her yes
    asked = attack.approvals_asked()
    assert len(asked) == 1, f"expected one approval request, got {asked}"
    assert "write functions/helper.py" in asked[0], asked[0]
    assert not (attack.workspace / "functions" / "helper.py").exists()
    # And after her yes, the file is written there
    attack.press("approve")
    assert (attack.workspace / "functions" / "helper.py").read_text() == HELPER


def test_send_file_request_shows_the_resolved_path(attack_fleet: Any) -> None:
    # Given AGENT_APPROVAL=all and a file sent by a roundabout path
    attack: Attack = attack_fleet(agent_approval="all")
    (attack.workspace / "report.csv").write_text("a,b\n")
    call = {"path": "./functions/../report.csv", "caption": "here"}
    attack.model.script(Reply.tool("send_file", call), Reply.answer("ok"))
    # When Alice asks for it
    attack.say("send the report")
    # Then the request names the file the call will send
    (asked,) = attack.approvals_asked()
    assert "path='report.csv'" in asked, asked


def test_prompt_files_linked_out_reach_no_model_request(attack: Attack) -> None:
    # Given every prompt file, a skill and today's log are links to the project's .env
    env = attack.workspace.parent / ".env"
    today = datetime.fromtimestamp(attack.runtime.now_ms() / 1000, UTC).date()
    for name in ("SOUL.md", "IDENTITY.md", "USER.md", "MEMORY.md", "skills/env.md"):
        (attack.workspace / name).unlink(missing_ok=True)
        (attack.workspace / name).symlink_to(env)
    for day in (today - timedelta(days=1), today, today + timedelta(days=1)):
        (attack.workspace / "memory" / f"{day.isoformat()}.md").symlink_to(env)
    attack.model.script(Reply.answer("hello"))
    # When Alice writes
    attack.say("hi")
    # Then the agent answered, and the canary is in no request, record or workspace file
    assert attack.model.requests, "the model was never called"
    attack.assert_no_canary()


@pytest.mark.parametrize("link", ["today's log", "memory folder"])
def test_remember_writes_nothing_through_a_link_out(attack: Attack, link: str) -> None:
    # Given today's log (or all of memory/) linked to a file (folder) outside the workspace
    outside = _outside(attack)
    memory = attack.workspace / "memory"
    if link == "memory folder":
        for entry in memory.iterdir():
            entry.unlink() if entry.is_file() else None
        memory.rmdir()
        memory.symlink_to(outside)
    else:
        today = datetime.fromtimestamp(attack.runtime.now_ms() / 1000, UTC).date()
        for day in (today - timedelta(days=1), today, today + timedelta(days=1)):
            (memory / f"{day.isoformat()}.md").symlink_to(outside / "zz.pth")
    attack.model.script(Reply.tool("remember", {"note": "import os"}), Reply.answer("ok"))
    # When the attacker's model remembers a note
    attack.say("remember this")
    # Then the model was told it could not be written, and nothing outside changed
    results = attack.tool_results()
    assert len(results) == 1 and "cannot write to memory" in results[0], results
    assert sorted(p.name for p in outside.iterdir()) == ["zz.pth"]
    assert (outside / "zz.pth").read_text() == "original\n"


@pytest.mark.parametrize("kind", ["photo", "document"])
def test_download_writes_nothing_through_a_linked_inbox(attack: Attack, kind: str) -> None:
    # Given inbox/ is a link to a folder outside the workspace
    outside = _outside(attack)
    (attack.workspace / "inbox").symlink_to(outside)
    png = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 30, 30)).save(png, format="PNG")
    attack.telegram.add_file("AgAD-large", png.getvalue(), "photos/file_1.png")
    attack.telegram.add_file("BQAD-notes.txt", b"milk, eggs, tea")
    attack.model.script(Reply.answer("got it"))
    # When Alice sends a photo or a document
    update = payloads.tg_photo(70500) if kind == "photo" else payloads.tg_document(70501)
    _send(attack, update)
    # Then Alice is told the file was not kept, and nothing was written outside the workspace
    told = [m.get("text", "") for m in attack.telegram.messages]
    assert any("link" in text for text in told), told
    assert sorted(p.name for p in outside.iterdir()) == ["zz.pth"]
