"""An approval pressed in the console resumes the agent's waiting turn: the same event a chat
button publishes, decided by the same `answer-approval` function."""

from __future__ import annotations

from pathlib import Path

from bs4 import Tag
from fastapi.testclient import TestClient

from harness.runtime import Runtime
from tests.fakes.model_server import ModelServer, Reply
from tests.web.console_client import signed_in, soup
from tests.web.test_chat_api import _events, runtime  # noqa: F401
from tests.web.test_chat_approvals import _replies, fleet  # noqa: F401

# ruff: noqa: F811  (`runtime` and `fleet` are the answering fixtures of the chat tests)


def _turn_waiting_for_approval(
    fleet: TestClient, runtime: Runtime, model_server: ModelServer, auth: dict[str, str],
    answer: str,
) -> tuple[TestClient, Tag, str]:  # fmt: skip
    """A chat turn waiting for approval to write `functions/a.py` (then replying `answer`),
    and the console signed in: its client, the request's row and the forms' CSRF token."""
    model_server.script(
        Reply.tool("write", {"path": "functions/a.py", "content": "a = 1\n"}),
        Reply.answer(answer),
    )
    _events(fleet, {"message": "write it"}, auth)
    console = signed_in(runtime)
    (row,) = soup(console, "/dashboard/actions").select("#approvals tr[data-approval]")
    token = str(row.select_one("input[name=csrf]")["value"])  # type: ignore[index]
    return console, row, token


def test_console_approve_resumes_the_waiting_turn(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    auth: dict[str, str],
    tmp_path: Path,
) -> None:
    # Given a turn waiting for approval to write in functions/
    console, row, token = _turn_waiting_for_approval(fleet, runtime, model_server, auth, "Written.")
    form = row.select_one("form:has(input[value=approve])")
    assert form is not None, row
    # When Approve is pressed in the console
    response = console.post(str(form["action"]), data={"csrf": token, "decision": "approve"})
    # Then the flash says it was sent, the file is written and the turn replies
    assert response.status_code == 303, response.text
    assert "approve sent" in str(soup(console, "/dashboard/actions").select_one("#flash"))
    assert (tmp_path / "workspace" / "functions" / "a.py").read_text() == "a = 1\n"
    assert _replies(runtime) == ["Written."]
    # And the request is no longer listed
    assert soup(console, "/dashboard/actions").select("#approvals tr[data-approval]") == []


def test_console_deny_refuses_the_tool_call(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    auth: dict[str, str],
    tmp_path: Path,
) -> None:
    # Given a turn waiting for approval
    console, row, token = _turn_waiting_for_approval(
        fleet, runtime, model_server, auth, "Not written."
    )
    # When Deny is pressed
    url = f"/dashboard/approvals/{row['data-approval']}"
    assert console.post(url, data={"csrf": token, "decision": "deny"}).status_code == 303
    # Then nothing is written and the turn ends with the model's reply
    assert not (tmp_path / "workspace" / "functions" / "a.py").exists()
    assert _replies(runtime) == ["Not written."]
