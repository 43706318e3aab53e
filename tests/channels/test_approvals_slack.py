"""Approvals in Slack: Block Kit buttons in the thread, and presses through the signed
`/webhooks/slack/interactions` route."""

# ruff: noqa: F811  (`fleet` is the webhook fleet fixture of test_e2e_turn, used by name)

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import urlencode

from fastapi.testclient import TestClient

from harness.runtime import Runtime
from harness.runtime.testing import drain
from tests.channels import payloads
from tests.channels.approval_presses import slack_signed
from tests.channels.conftest import SLACK_SIGNING_SECRET
from tests.channels.test_e2e_turn import fleet  # noqa: F401
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.slack_api import FakeSlackApi

CHANNEL = "C123ABC456"


def _ask(fleet: TestClient, runtime: Runtime, model: ModelServer, *after: Reply) -> None:
    """Ada mentions the bot in #general; the model wants a risky write."""
    model.script(Reply.tool("write", {"path": "functions/s.py", "content": "s = 1\n"}), *after)
    body = json.dumps(payloads.slack_app_mention()).encode()
    headers = {**slack_signed(body), "Content-Type": "application/json"}
    assert fleet.post("/webhooks/slack", content=body, headers=headers).status_code == 200
    drain(runtime)


def _press_body(slack_api: FakeSlackApi, decision: str, user: str = "U0USER") -> bytes:
    request = next(m for m in slack_api.messages if "blocks" in m)
    (button,) = [
        e
        for e in request["blocks"][1]["elements"]
        if e["action_id"] == f"harness_approval_{decision}"
    ]
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": "T1"},
        "team": {"id": "T1"},
        "channel": {"id": CHANNEL, "name": "general"},
        "container": {"type": "message", "message_ts": request["ts"], "channel_id": CHANNEL},
        "message": {"ts": request["ts"], "text": request["text"], "thread_ts": "1"},
        "trigger_id": "123.456",
        "actions": [
            {
                "type": "button",
                "action_id": button["action_id"],
                "block_id": request["blocks"][1]["block_id"],
                "value": button["value"],
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def _post_press(fleet: TestClient, body: bytes, secret: str = SLACK_SIGNING_SECRET) -> int:
    headers = {**slack_signed(body, secret), "Content-Type": "application/x-www-form-urlencoded"}
    return fleet.post("/webhooks/slack/interactions", content=body, headers=headers).status_code


def test_slack_approval_buttons_then_approve_runs_the_call(
    fleet: TestClient,
    runtime: Runtime,
    model_server: ModelServer,
    slack_api: FakeSlackApi,
    tmp_path: Path,
) -> None:
    # Given a request posted with buttons in the mention's thread
    _ask(fleet, runtime, model_server, Reply.answer("Written."))
    request = next(m for m in slack_api.messages if "blocks" in m)
    assert request["thread_ts"] == payloads.slack_app_mention()["event"]["ts"]
    assert "functions/s.py" in request["text"]
    # When Ada presses Approve through the signed interactions route
    assert _post_press(fleet, _press_body(slack_api, "approve")) == 200
    drain(runtime)
    # Then the file is written, the answer posted, and the request shows who approved
    assert (tmp_path / "workspace" / "functions" / "s.py").read_text() == "s = 1\n"
    assert slack_api.messages[-1]["text"] == "Written."
    request = next(m for m in slack_api.messages if m["ts"] == request["ts"])
    assert "Approved by u0user" in request["text"] and "blocks" not in request


def test_slack_interaction_with_a_wrong_signature_is_refused(
    fleet: TestClient, runtime: Runtime, model_server: ModelServer, slack_api: FakeSlackApi
) -> None:
    # Given a waiting request
    _ask(fleet, runtime, model_server, Reply.answer("Written."))
    # When a press arrives signed with the wrong secret
    status = _post_press(fleet, _press_body(slack_api, "approve"), secret="not-the-secret")
    drain(runtime)
    # Then it is refused with 401 and nothing changes: no update, the model was not called again
    assert status == 401
    assert slack_api.calls_to("chat.update") == []
    assert len(model_server.requests) == 1


def test_slack_press_by_someone_else_is_told_so_privately(
    fleet: TestClient, runtime: Runtime, model_server: ModelServer, slack_api: FakeSlackApi
) -> None:
    # Given a request Ada's mention caused
    _ask(fleet, runtime, model_server, Reply.answer("Written."))
    # When Bob presses Approve
    assert _post_press(fleet, _press_body(slack_api, "approve", user="U0BOB")) == 200
    drain(runtime)
    # Then only Bob is told he may not answer, and the request still has its buttons
    (ephemeral,) = slack_api.calls_to("chat.postEphemeral")
    assert ephemeral.params["user"] == "U0BOB"
    assert ephemeral.params["text"].startswith("Only the person who asked")
    assert slack_api.calls_to("chat.update") == []
