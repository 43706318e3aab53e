"""Who may see the dashboard: a sign-in that sets a signed, expiring cookie, or a Bearer token.

The cookie is `v2.<issued at, unix seconds>.<HMAC-SHA256 of that time keyed by
HARNESS_API_KEY>`: it never holds the key, changing the key signs everyone out, and it is
refused `MAX_AGE_S` after it was issued whatever the browser keeps. A cookie of an older
format is simply not signed in (the person is asked to sign in again). With no key
configured the dashboard is closed (503), like the API.
"""

from __future__ import annotations

import hashlib
import hmac
import time

from fastapi import HTTPException, Request
from fastapi.responses import Response

from harness.web.auth import equal_secrets
from harness.web.deps import WebContext

COOKIE = "harness_dashboard"
PATH = "/dashboard"
MAX_AGE_S = 12 * 3600
"""How long a sign-in lasts, in the browser (Max-Age) and on the server (issue time)."""
CLOCK_SKEW_S = 60
"""A cookie issued this far in the future is still taken (web processes' clocks differ)."""
_VERSION = "v2"


def cookie_value(api_key: str, issued_at: int) -> str:
    """The cookie a sign-in at `issued_at` (unix seconds) sets for `api_key`."""
    return f"{_VERSION}.{issued_at}.{_mac(api_key, issued_at)}"


def valid_cookie(value: str, api_key: str, now: float) -> bool:
    """True when `value` is a cookie signed with `api_key`, issued within `MAX_AGE_S` before
    `now`. Never raises, whatever the client sent."""
    version, _, rest = value.partition(".")
    issued_text, _, mac = rest.partition(".")
    if version != _VERSION or not (issued_text.isascii() and issued_text.isdigit()):
        return False
    if len(issued_text) > 12:  # no honest clock needs more digits
        return False
    issued = int(issued_text)
    if not now - MAX_AGE_S < issued <= now + CLOCK_SKEW_S:
        return False
    return equal_secrets(mac, _mac(api_key, issued))


def _mac(api_key: str, issued_at: int) -> str:
    message = f"harness-dashboard-{_VERSION}|{issued_at}".encode()
    return hmac.new(api_key.encode("utf-8", "surrogatepass"), message, hashlib.sha256).hexdigest()


def configured_key(context: WebContext) -> str:
    """`HARNESS_API_KEY`; raises 503 when it is unset (the dashboard is disabled)."""
    key = context.settings.harness_api_key
    if key is None or not key.get_secret_value():
        raise HTTPException(503, "the dashboard is disabled: set HARNESS_API_KEY")
    return key.get_secret_value()


def signed_in(request: Request, context: WebContext, now: float | None = None) -> bool:
    """True when the request carries a valid sign-in cookie or `Authorization: Bearer <key>`.
    Never raises on what the client sent."""
    key = configured_key(context)
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and equal_secrets(token.strip(), key):
        return True
    cookie = request.cookies.get(COOKIE, "")
    return valid_cookie(cookie, key, time.time() if now is None else now)


def sign_in(response: Response, context: WebContext, now: float | None = None) -> None:
    """Set the sign-in cookie on `response`: HttpOnly, SameSite=Strict, Max-Age `MAX_AGE_S`,
    path /dashboard, and Secure when `PUBLIC_URL` is https."""
    issued = int(time.time() if now is None else now)
    response.set_cookie(
        COOKIE, cookie_value(configured_key(context), issued), max_age=MAX_AGE_S,
        path=PATH, secure=_https(context), httponly=True, samesite="strict",
    )  # fmt: skip


def sign_out(response: Response, context: WebContext) -> None:
    """Clear the sign-in cookie on `response` (same attributes as `sign_in`'s)."""
    response.delete_cookie(
        COOKIE, path=PATH, secure=_https(context), httponly=True, samesite="strict"
    )


def _https(context: WebContext) -> bool:
    return (context.settings.public_url or "").lower().startswith("https://")
