"""Checks that a webhook request comes from Slack: the v0 HMAC-SHA256 signature of
`v0:<timestamp>:<body>` with the signing secret, and a timestamp within five minutes."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from slack_sdk.signature import Clock, SignatureVerifier

from channels.base import header
from channels.errors import WebhookRejected

SIGNATURE_HEADER = "X-Slack-Signature"
TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
MAX_AGE_SECONDS = 300
MAX_TIMESTAMP_DIGITS = 12


class _FixedClock(Clock):
    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now

    def now(self) -> float:
        return self._now()


def verify_signature(
    headers: Mapping[str, str],
    body: bytes,
    signing_secret: str | None,
    *,
    now: Callable[[], float] = time.time,
) -> None:
    """Return if the request is signed with `signing_secret` within the last five minutes;
    otherwise raise `WebhookRejected(401)` saying why. `body` must be the raw bytes received.
    Fails closed: with no secret configured every request is refused."""
    if not signing_secret:
        raise WebhookRejected(401, "SLACK_SIGNING_SECRET is not set; refusing the webhook")
    signature = header(headers, SIGNATURE_HEADER)
    timestamp = header(headers, TIMESTAMP_HEADER)
    if not signature or not timestamp:
        raise WebhookRejected(401, f"missing {SIGNATURE_HEADER} or {TIMESTAMP_HEADER} header")
    if not signature.isascii():  # the digest comparison refuses non-ASCII text (a TypeError)
        raise WebhookRejected(401, f"malformed {SIGNATURE_HEADER}")
    # Unix seconds in ASCII digits: int() would take "+1_0" or Arabic-Indic digits, and a
    # few hundred digits overflow the float subtraction below.
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= MAX_TIMESTAMP_DIGITS):
        raise WebhookRejected(401, f"malformed {TIMESTAMP_HEADER}")
    age = abs(now() - int(timestamp))
    if age > MAX_AGE_SECONDS:
        raise WebhookRejected(401, "stale request: timestamp more than five minutes away")
    verifier = SignatureVerifier(signing_secret, clock=_FixedClock(now))
    try:
        valid = verifier.is_valid(body=body, timestamp=timestamp, signature=signature)
    except UnicodeDecodeError:
        valid = False
    if not valid:
        raise WebhookRejected(401, "bad signature")
