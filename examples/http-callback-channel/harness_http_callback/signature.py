"""Signing and checking requests in both directions, the way Slack and GitHub do it.

    X-Harness-Timestamp: <unix seconds>
    X-Harness-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>." + body, keyed with the secret>

The timestamp is inside the signed text and must be within five minutes of now, so that a
captured request cannot be replayed later.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Mapping

from channels.base import header
from channels.errors import WebhookRejected

SIGNATURE_HEADER = "X-Harness-Signature"
TIMESTAMP_HEADER = "X-Harness-Timestamp"
MAX_AGE_SECONDS = 300
_PREFIX = "sha256="


def sign(body: bytes, secret: str, timestamp: int) -> dict[str, str]:
    """The two headers that sign `body` at `timestamp` (unix seconds) with `secret`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return {TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: _PREFIX + digest.hexdigest()}


def check(
    headers: Mapping[str, str],
    body: bytes,
    secret: str | None,
    *,
    now: Callable[[], float] = time.time,
) -> None:
    """Return if `body` is signed with `secret` within the last five minutes; otherwise raise
    `WebhookRejected(401)` saying why (never quoting the secret). Fails closed: with no secret
    every request is refused."""
    if not secret:
        raise WebhookRejected(401, "HTTP_CALLBACK_SECRET is not set; refusing the webhook")
    signature = header(headers, SIGNATURE_HEADER) or ""
    timestamp = header(headers, TIMESTAMP_HEADER) or ""
    if not signature.isascii() or not signature.startswith(_PREFIX):
        raise WebhookRejected(401, f"missing or malformed {SIGNATURE_HEADER}")
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        raise WebhookRejected(401, f"missing or malformed {TIMESTAMP_HEADER}")
    if abs(now() - int(timestamp)) > MAX_AGE_SECONDS:
        raise WebhookRejected(401, "stale request: timestamp more than five minutes away")
    expected = sign(body, secret, int(timestamp))[SIGNATURE_HEADER]
    if not hmac.compare_digest(expected, signature):
        raise WebhookRejected(401, "signature does not match")
