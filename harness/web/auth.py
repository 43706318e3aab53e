"""Bearer-token authentication for the API, checked against `HARNESS_API_KEY`.

Neither the configured key nor a presented token is ever logged or echoed back.
"""

from __future__ import annotations

import hmac
import logging
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Request, status

from harness.web.deps import WebContext, web_context

log = logging.getLogger(__name__)

_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def require_api_key(
    request: Request,
    context: Annotated[WebContext, Depends(web_context)],
    authorization: Annotated[str | None, Header()] = None,
) -> None:
    """FastAPI dependency: pass when `Authorization: Bearer <HARNESS_API_KEY>` is presented.

    Raises 503 when no key is configured (the API is disabled), 401 with a Bearer challenge
    when the header is missing, malformed or wrong. Comparison is constant-time.
    """
    configured = context.settings.harness_api_key
    if configured is None or not configured.get_secret_value():
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, "API disabled: set HARNESS_API_KEY"
        )
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        log.info("rejected %s %s: no bearer token", request.method, request.url.path)
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "missing bearer token", _CHALLENGE)
    if not equal_secrets(token.strip(), configured.get_secret_value()):
        log.info("rejected %s %s: wrong bearer token", request.method, request.url.path)
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "invalid bearer token", _CHALLENGE)


def equal_secrets(given: str, expected: str) -> bool:
    """True when `given` is `expected`, compared in constant time. Never raises: any text a
    client sends (non-ASCII, lone surrogates) is compared as its UTF-8 bytes, where
    `hmac.compare_digest` on two str refuses non-ASCII with a TypeError."""
    return hmac.compare_digest(_utf8(given), _utf8(expected))


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")
