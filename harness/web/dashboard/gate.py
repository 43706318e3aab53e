"""Who may see the dashboard: a login form that sets an HTTP-only cookie, or a Bearer token.

The cookie holds a keyed digest of `HARNESS_API_KEY`, never the key itself; changing the key
signs everyone out. With no key configured the dashboard is closed (503), like the API.
"""

from __future__ import annotations

import hashlib
import hmac

from fastapi import HTTPException, Request

from harness.web.deps import WebContext

COOKIE = "harness_dashboard"


def cookie_value(api_key: str) -> str:
    """The cookie a successful login sets for `api_key`."""
    return hmac.new(api_key.encode(), b"harness-dashboard-v1", hashlib.sha256).hexdigest()


def configured_key(context: WebContext) -> str:
    """`HARNESS_API_KEY`; raises 503 when it is unset (the dashboard is disabled)."""
    key = context.settings.harness_api_key
    if key is None or not key.get_secret_value():
        raise HTTPException(503, "the dashboard is disabled: set HARNESS_API_KEY")
    return key.get_secret_value()


def signed_in(request: Request, context: WebContext) -> bool:
    """True when the request carries the login cookie or `Authorization: Bearer <key>`."""
    key = configured_key(context)
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer ") and hmac.compare_digest(header[7:].strip(), key):
        return True
    return hmac.compare_digest(request.cookies.get(COOKIE, ""), cookie_value(key))
