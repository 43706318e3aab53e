"""Checks that a webhook request comes from Telegram: the secret token given to setWebhook
comes back in the `X-Telegram-Bot-Api-Secret-Token` header."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from channels.base import header
from channels.errors import WebhookRejected

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


def verify_secret_token(headers: Mapping[str, str], expected: str | None) -> None:
    """Return if the header matches `expected` (compared in constant time); otherwise raise
    `WebhookRejected(401)`. Fails closed: with no secret configured every request is refused."""
    if not expected:
        raise WebhookRejected(401, "TELEGRAM_WEBHOOK_SECRET is not set; refusing the webhook")
    given = header(headers, SECRET_HEADER)
    if given is None:
        raise WebhookRejected(401, f"missing {SECRET_HEADER} header")
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise WebhookRejected(401, f"wrong {SECRET_HEADER}")
