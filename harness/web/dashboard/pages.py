"""What the console's charts, actions and health pages share: the CSRF
token of a form, the one-shot flash message an action leaves for the next page, and
rendering a template with them.

The CSRF token is an HMAC of the sign-in cookie keyed by `HARNESS_API_KEY`: a form rendered
for one sign-in is refused after sign-out or under another sign-in, and a page of another
site cannot read it (the cookie is HttpOnly and SameSite=Strict besides). A client signed
in with a Bearer token sends no cookie and needs no token: a browser never adds that header
by itself.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import inspect
import logging
from collections.abc import Callable
from typing import Any, TypeVar, cast
from urllib.parse import quote, unquote

from fastapi import HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from harness.web.auth import equal_secrets
from harness.web.dashboard import gate
from harness.web.dashboard.render import templates
from harness.web.deps import WebContext
from harness.web.unavailable import RETRY_AFTER_S

Route = TypeVar("Route", bound=Callable[..., Any])
FLASH = "harness_flash"
FLASH_MAX_CHARS = 300
log = logging.getLogger(__name__)


def csrf_token(request: Request, context: WebContext) -> str:
    """The token this sign-in's forms carry ("" for a Bearer client, which has no cookie)."""
    cookie = request.cookies.get(gate.COOKIE, "")
    if not cookie:
        return ""
    key = gate.configured_key(context).encode("utf-8", "surrogatepass")
    return hmac.new(key, f"harness-csrf|{cookie}".encode(), hashlib.sha256).hexdigest()


def check_csrf(request: Request, context: WebContext, given: str) -> None:
    """403 unless `given` is this sign-in's token. A Bearer-authenticated request (no
    cookie) passes: a browser cannot be made to send that header."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and equal_secrets(token.strip(), gate.configured_key(context)):
        return
    expected = csrf_token(request, context)
    if not expected or not equal_secrets(given, expected):
        raise HTTPException(403, "the form is stale or not from this dashboard; reload the page")


def page(request: Request, context: WebContext, name: str, **values: Any) -> HTMLResponse:
    """Render `name` for a signed-in operator, with the CSRF token and the flash message
    (shown once: the response clears it)."""
    flash = unquote(request.cookies.get(FLASH, ""))[:FLASH_MAX_CHARS]
    body = templates.get_template(name).render(
        signed_in=True, csrf=csrf_token(request, context), flash=flash, **values
    )
    response = HTMLResponse(body)
    if flash:
        response.delete_cookie(FLASH, path=gate.PATH, httponly=True, samesite="strict")
    return response


def as_page(route: Route) -> Route:
    """Wrap a console route so that a 4xx it raises (an unknown id, a stale form) answers as
    an HTML page a person can read, with the same status, instead of FastAPI's JSON; the
    sign-in redirect (303) passes through. FastAPI calls routes with keyword arguments and
    reads the wrapped signature, so the route's parameters are unchanged."""
    if inspect.iscoroutinefunction(route):

        @functools.wraps(route)
        async def wrapped_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await route(*args, **kwargs)
            except HTTPException as exc:
                return _refusal(exc)

        return cast(Route, wrapped_async)

    @functools.wraps(route)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return route(*args, **kwargs)
        except HTTPException as exc:
            return _refusal(exc)

    return cast(Route, wrapped)


def _refusal(exc: HTTPException) -> HTMLResponse:
    if not 400 <= exc.status_code < 500:
        raise exc
    body = templates.get_template("refused.html").render(
        signed_in=True, status=exc.status_code, message=str(exc.detail)
    )
    return HTMLResponse(body, status_code=exc.status_code, headers=exc.headers)


def unavailable(request: Request, exc: Exception) -> HTMLResponse:
    """The 503 page (with Retry-After) of a console route that could not reach Redis, naming
    only the error's class: its message may name hosts. Logs one line, no traceback."""
    error = type(exc.__cause__ or exc).__name__
    log.warning("dashboard %s: Redis unavailable (%s)", request.url.path, error)
    body = templates.get_template("unavailable.html").render(signed_in=True, error=error)
    return HTMLResponse(body, status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)})


def redirect_with_flash(location: str, message: str) -> RedirectResponse:
    """A 303 to `location` that shows `message` on the page it lands on."""
    response = RedirectResponse(location, status_code=303)
    response.set_cookie(FLASH, quote(message[:FLASH_MAX_CHARS]), max_age=60, path=gate.PATH,
                        httponly=True, samesite="strict")  # fmt: skip
    return response
