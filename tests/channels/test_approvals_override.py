"""The operator may answer a request that names approvers from the console, as an explicit
override: the turn resumes, and the record, the chat's request message and a late press all
name the override. No chat press, typed answer or forged event carries an override."""

# ruff: noqa: F811  (`fleet` is the webhook fleet fixture of test_e2e_turn, used by name)

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from harness.errors import InvalidEventError
from harness.events import OPERATOR_CHANNEL, OPERATOR_SUBJECT, ApprovalGiven, Destination
from harness.records.stores import redis_records
from harness.runtime import Runtime, publish
from harness.runtime.testing import drain
from tests.channels import payloads
from tests.channels.approval_presses import (
    MALLORY,
    run_status,
    telegram_press,
    telegram_request,
    write_in_private,
)
from tests.channels.test_e2e_turn import fleet  # noqa: F401
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi
from tests.web.console_client import signed_in, soup

WRITE = Reply.tool("write", {"path": "functions/o.py", "content": "o = 1\n"})
ALICE = f"telegram:user:{payloads.ALICE['id']}"
OVERRIDE_BY = f"the operator (dashboard), overriding {ALICE}"


def test_console_override_resumes_the_turn_and_every_place_names_the_override(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
    tmp_path: Path,
) -> None:
    # Given Alice's turn waiting for her approval, listed in the console as hers to answer
    model_server.script(WRITE, Reply.answer("Written."))
    run_id = write_in_private(fleet, runtime, 60001, "write the job")
    console = signed_in(runtime)
    (row,) = soup(console, "/dashboard/actions").select("#approvals tr[data-approval]")
    assert f"for {ALICE}" in row.text and "Approve (override)" in row.text, row
    token = str(row.select_one("input[name=csrf]")["value"])  # type: ignore[index]
    # When the operator ticks the override box and presses Approve (override)
    response = console.post(
        f"/dashboard/approvals/{row['data-approval']}",
        data={"csrf": token, "decision": "approve", "override": "yes"},
    )
    assert response.status_code == 303, response.text
    drain(runtime)
    # Then the turn resumed: the file is written and the turn completed
    assert (tmp_path / "workspace" / "functions" / "o.py").read_text() == "o = 1\n"
    assert run_status(runtime, run_id) == "completed"
    # And the record names the override
    settled = redis_records(runtime).approvals.settled(str(row["data-approval"]))
    assert settled is not None and (settled.state, settled.by) == ("approve", OVERRIDE_BY)
    # And the request in the chat shows it, without its buttons
    request = telegram_request(telegram_api)
    assert f"Approved by {OVERRIDE_BY}" in request["text"], request["text"]
    assert "reply_markup" not in request
    # And Alice's late press is told who answered
    telegram_press(fleet, telegram_api, "d", 60002)
    drain(runtime)
    answer = telegram_api.callback_answers[-1]["text"]
    assert answer == f"Already answered: ✅ Approved by {OVERRIDE_BY}.", answer


def test_a_chat_press_by_someone_not_asked_is_still_refused(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    telegram_api: FakeTelegramApi,
) -> None:
    # Given Alice's turn waiting for her approval
    model_server.script(WRITE, Reply.answer("Not written."))
    run_id = write_in_private(fleet, runtime, 60011, "write the job")
    # When Mallory presses Approve
    telegram_press(fleet, telegram_api, "a", 60012, user=MALLORY)
    drain(runtime)
    # Then she is refused and the request still waits for Alice
    assert telegram_api.callback_answers[-1]["text"].startswith("Only the person who asked")
    assert run_status(runtime, run_id) == "waiting"


@pytest.mark.parametrize(
    ("subject", "channel"),
    [(f"telegram:user:{MALLORY['id']}", "telegram"), (OPERATOR_SUBJECT, "telegram"),
     ("dashboard:user:operator", OPERATOR_CHANNEL)],
)  # fmt: skip
def test_an_override_from_anyone_but_the_console_operator_is_not_a_valid_event(
    runtime: Runtime, subject: str, channel: str
) -> None:
    # Given an answer carrying the override, not from the console's operator on its channel
    data = {
        "approval_id": "ap-1", "decision": "approve", "subject": subject, "channel": channel,
        "destination": {"chat_id": "1"}, "override": True,
    }  # fmt: skip
    # When it is published, Then it is refused as invalid and cannot be built either
    with pytest.raises(InvalidEventError, match="override"):
        publish({"name": "agent.approval.given", "data": data}, runtime=runtime)
    with pytest.raises(ValueError, match="override"):
        ApprovalGiven.model_validate(data)
    # And even one built without validation does not count as the operator's
    forged = ApprovalGiven.model_construct(
        approval_id="ap-1", decision="approve", subject=subject, channel=channel,
        destination=Destination(chat_id="1"), override=True,
    )  # fmt: skip
    assert not forged.by_operator
