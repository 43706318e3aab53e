"""Pressing the buttons of an approval request the way the platforms deliver it: a Telegram
`callback_query` update on the webhook, a signed Slack `block_actions` interaction (or its
payload alone, as Socket Mode hands it over); and the message that makes a run ask, and the
run's status, that the approval tests share."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any
from urllib.parse import urlencode

from fastapi.testclient import TestClient

from harness.agent.handlers import HANDLE_MESSAGE
from harness.records.pairing import RedisAccessStore
from harness.runtime import Runtime, run_id_for
from harness.runtime.testing import drain
from tests.channels import payloads
from tests.channels.conftest import SLACK_SIGNING_SECRET, TELEGRAM_SECRET
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.telegram_api import FakeTelegramApi

TELEGRAM_HEADERS = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
SLACK_CHANNEL = "C123ABC456"
BOB = {"id": 2222222, "is_bot": False, "first_name": "Bob"}
MALLORY = {"id": 6666666, "is_bot": False, "first_name": "Mallory"}


def write_in_private(fleet: TestClient, runtime: Runtime, update_id: int, text: str) -> str:
    """Alice, paired, writes `text` in her private chat on Telegram; the fleet runs until the
    turn waits or ends. Returns the turn's run id."""
    RedisAccessStore(runtime).grant(f"telegram:user:{payloads.ALICE['id']}", "Alice", "test")
    update = payloads.tg_private_text(update_id, text=text)
    response = fleet.post("/webhooks/telegram", json=update, headers=TELEGRAM_HEADERS)
    assert response.status_code == 200, response.text
    drain(runtime)
    return run_id_for(HANDLE_MESSAGE, response.json()["event_id"])


def run_status(runtime: Runtime, run_id: str) -> str:
    """The run's status in the ledger; fails the test when the run is unknown."""
    run = runtime.ledger.run(run_id)
    assert run is not None, f"run {run_id} is unknown"
    return run.status


def telegram_request(telegram_api: FakeTelegramApi) -> dict[str, Any]:
    """The request message as the fake holds it now (edits included)."""
    sent = next(c for c in telegram_api.calls_to("sendMessage") if "reply_markup" in c.params)
    chat = str(sent.params["chat_id"])
    return next(
        m
        for m in telegram_api.messages
        if str(m["chat"]["id"]) == chat and "🔐" in m.get("text", "")
    )


def telegram_press(
    fleet: TestClient,
    telegram_api: FakeTelegramApi,
    code: str,
    update_id: int,
    user: dict[str, Any] | None = None,
) -> None:
    """Press button `code` (a, d, s) of the request, as `user` (Alice by default)."""
    sent = next(c for c in telegram_api.calls_to("sendMessage") if "reply_markup" in c.params)
    (button,) = [
        b
        for row in sent.params["reply_markup"]["inline_keyboard"]
        for b in row
        if b["callback_data"].endswith(f":{code}")
    ]
    request = telegram_request(telegram_api)
    update = {
        "update_id": update_id,
        "callback_query": {
            "id": f"cb-{update_id}",
            "from": user or dict(payloads.ALICE),
            "chat_instance": "42",
            "message": {
                "message_id": request["message_id"],
                "chat": request["chat"],
                "date": 1441645600,
                "text": request["text"],
            },
            "data": button["callback_data"],
        },
    }
    response = fleet.post("/webhooks/telegram", json=update, headers=TELEGRAM_HEADERS)
    assert response.status_code == 200, response.text


def slack_signed(body: bytes, secret: str = SLACK_SIGNING_SECRET) -> dict[str, str]:
    """Slack's v0 signature headers for `body`."""
    timestamp = str(int(time.time()))
    signature = hmac.new(
        secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256
    ).hexdigest()
    return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": f"v0={signature}"}


def slack_request(slack_api: FakeSlackApi) -> dict[str, Any]:
    """The request message as the fake holds it now (updates included)."""
    return next(m for m in slack_api.messages if "Approval needed" in m.get("text", ""))


def slack_press_payload(
    slack_api: FakeSlackApi, decision: str, user: str = "U0USER", action_ts: str = "1.000001"
) -> dict[str, Any]:
    """The `block_actions` payload of a press on the request's `decision` button."""
    posted = next(c for c in slack_api.calls_to("chat.postMessage") if "blocks" in c.params)
    request = slack_request(slack_api)
    blocks = posted.params["blocks"]
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    (button,) = [
        e for e in blocks[1]["elements"] if e["action_id"] == f"harness_approval_{decision}"
    ]
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": "T1"},
        "team": {"id": "T1"},
        "channel": {"id": SLACK_CHANNEL, "name": "general"},
        "container": {
            "type": "message",
            "message_ts": request["ts"],
            "channel_id": SLACK_CHANNEL,
        },
        "message": {"ts": request["ts"], "text": request["text"], "thread_ts": "1"},
        "trigger_id": "123.456",
        "actions": [
            {
                "type": "button",
                "action_id": button["action_id"],
                "block_id": blocks[1]["block_id"],
                "value": button["value"],
                "action_ts": action_ts,
            }
        ],
    }


def slack_press(
    fleet: TestClient,
    slack_api: FakeSlackApi,
    decision: str,
    user: str = "U0USER",
    action_ts: str = "1.000001",
) -> None:
    """Press through the signed `/webhooks/slack/interactions` route."""
    payload = slack_press_payload(slack_api, decision, user, action_ts)
    body = urlencode({"payload": json.dumps(payload)}).encode()
    headers = {**slack_signed(body), "Content-Type": "application/x-www-form-urlencoded"}
    response = fleet.post("/webhooks/slack/interactions", content=body, headers=headers)
    assert response.status_code == 200, response.text


def slack_mention(fleet: TestClient) -> None:
    """Ada (U0USER) mentions the bot in #general, through the signed events route."""
    body = json.dumps(payloads.slack_app_mention()).encode()
    headers = {**slack_signed(body), "Content-Type": "application/json"}
    response = fleet.post("/webhooks/slack", content=body, headers=headers)
    assert response.status_code == 200, response.text
