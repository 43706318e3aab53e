"""Webhook verification: Telegram's secret token and Slack's v0 signature."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from channels.errors import WebhookRejected
from channels.slack.verify import verify_signature
from channels.telegram.verify import verify_secret_token
from tests.channels.conftest import SLACK_SIGNING_SECRET, TELEGRAM_SECRET

NOW = 1_700_000_000
BODY = b'{"token":"x","team_id":"T1","type":"event_callback","event":{"type":"app_mention"}}'


def slack_headers(
    body: bytes = BODY, timestamp: int = NOW, secret: str = SLACK_SIGNING_SECRET
) -> dict[str, str]:
    """Headers signed as Slack documents: v0=HMAC-SHA256(secret, "v0:<ts>:<body>")."""
    base = f"v0:{timestamp}:".encode() + body
    signature = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": str(timestamp), "X-Slack-Signature": signature}


def test_telegram_secret_token_accepted_in_any_header_case() -> None:
    verify_secret_token({"x-telegram-bot-api-secret-token": TELEGRAM_SECRET}, TELEGRAM_SECRET)


@pytest.mark.parametrize(
    ("headers", "expected", "reason"),
    [
        ({"X-Telegram-Bot-Api-Secret-Token": "wrong"}, TELEGRAM_SECRET, "wrong"),
        ({}, TELEGRAM_SECRET, "missing"),
        ({"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}, None, "TELEGRAM_WEBHOOK_SECRET"),
    ],
    ids=["wrong", "missing", "not-configured"],
)
def test_telegram_bad_secret_token_is_rejected_with_401(
    headers: dict[str, str], expected: str | None, reason: str
) -> None:
    with pytest.raises(WebhookRejected) as caught:
        verify_secret_token(headers, expected)

    assert caught.value.status == 401
    assert reason in caught.value.reason
    assert TELEGRAM_SECRET not in caught.value.reason


def test_slack_good_signature_is_accepted() -> None:
    verify_signature(slack_headers(), BODY, SLACK_SIGNING_SECRET, now=lambda: NOW + 10)


def test_slack_signature_within_five_minutes_is_accepted() -> None:
    verify_signature(slack_headers(), BODY, SLACK_SIGNING_SECRET, now=lambda: NOW + 299)


@pytest.mark.parametrize(
    ("headers", "body", "reason"),
    [
        (slack_headers(secret="another-secret"), BODY, "bad signature"),
        (slack_headers(), BODY + b" ", "bad signature"),
        (slack_headers(timestamp=NOW - 301), BODY, "stale"),
        (slack_headers(timestamp=NOW + 301), BODY, "stale"),
        ({}, BODY, "missing"),
        ({"X-Slack-Signature": slack_headers()["X-Slack-Signature"]}, BODY, "missing"),
        ({**slack_headers(), "X-Slack-Request-Timestamp": "yesterday"}, BODY, "malformed"),
        ({**slack_headers(), "X-Slack-Request-Timestamp": "9" * 400}, BODY, "malformed"),
        ({**slack_headers(), "X-Slack-Request-Timestamp": "1_700_000_000"}, BODY, "malformed"),
        ({**slack_headers(), "X-Slack-Request-Timestamp": "-1700000000"}, BODY, "malformed"),
        (slack_headers(body=b"\xff\xfe"), b"\xff\xfe", "bad signature"),
    ],
    ids=[
        "other-secret",
        "tampered-body",
        "stale",
        "future",
        "missing",
        "no-timestamp",
        "bad-timestamp",
        "400-digit-timestamp",
        "underscored-timestamp",
        "negative-timestamp",
        "not-utf8",
    ],
)
def test_slack_bad_or_stale_signature_is_rejected_with_401(
    headers: dict[str, str], body: bytes, reason: str
) -> None:
    with pytest.raises(WebhookRejected) as caught:
        verify_signature(headers, body, SLACK_SIGNING_SECRET, now=lambda: NOW)

    assert caught.value.status == 401
    assert reason in caught.value.reason


def test_slack_without_signing_secret_rejects_everything() -> None:
    with pytest.raises(WebhookRejected, match="SLACK_SIGNING_SECRET"):
        verify_signature(slack_headers(), BODY, None, now=lambda: NOW)
