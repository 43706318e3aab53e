"""Signing in to `/dashboard`: the cookie's attributes and lifetime, signing out, the limit on
failed attempts, and input that must be refused with a 4xx rather than a 500."""

from __future__ import annotations

import hashlib
import hmac
import time

from fastapi.testclient import TestClient
from pydantic import SecretStr

from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import create_app
from harness.web import dashboard as dashboard_routes
from harness.web.dashboard import gate
from harness.web.dashboard.attempts import MAX_FAILURES

KEY = "secret-key-1"


def _client(runtime: Runtime, public_url: str | None = None) -> TestClient:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        harness_api_key=SecretStr(KEY),
        public_url=public_url,
    )
    app = create_app(lambda: runtime, settings=settings, routers=[dashboard_routes.router])
    return TestClient(app, follow_redirects=False)


def _cookie(value: str) -> dict[str, str]:
    return {"Cookie": f"{gate.COOKIE}={value}"}


def _cookie_attributes(set_cookie: str) -> dict[str, str]:
    parts = [part.strip() for part in set_cookie.split(";")]
    attributes = dict(part.partition("=")[::2] for part in parts[1:])
    return {name.lower(): value for name, value in attributes.items()}


def test_sign_in_cookie_over_http_is_httponly_strict_expiring_and_not_secure(
    runtime: Runtime,
) -> None:
    # Given a dashboard whose PUBLIC_URL is unset (served over http)
    client = _client(runtime)
    # When the right key is posted
    response = client.post("/dashboard/login", data={"key": KEY})
    # Then the cookie is HttpOnly, SameSite=Strict, lasts 12 h, and is not marked Secure
    assert response.status_code == 303, response.text
    attributes = _cookie_attributes(response.headers["set-cookie"])
    assert "httponly" in attributes and attributes["samesite"].lower() == "strict", attributes
    assert attributes["max-age"] == str(12 * 3600) and attributes["path"] == "/dashboard"
    assert "secure" not in attributes, attributes


def test_sign_in_cookie_is_secure_when_public_url_is_https(runtime: Runtime) -> None:
    # Given a dashboard served at an https PUBLIC_URL
    client = _client(runtime, public_url="https://harness.example.org")
    # When the right key is posted
    response = client.post("/dashboard/login", data={"key": KEY})
    # Then the cookie is marked Secure (and keeps its other attributes)
    attributes = _cookie_attributes(response.headers["set-cookie"])
    assert "secure" in attributes and "httponly" in attributes, attributes


def test_sign_in_cookie_opens_the_dashboard(runtime: Runtime) -> None:
    # Given a person who signed in
    client = _client(runtime)
    cookie = client.post("/dashboard/login", data={"key": KEY}).cookies[gate.COOKIE]
    client.cookies.clear()
    # When they open the dashboard with the cookie
    page = client.get("/dashboard", headers=_cookie(cookie))
    # Then they see the runs and a way to sign out
    assert page.status_code == 200 and 'id="runs"' in page.text, page.text
    assert 'id="sign-out"' in page.text


def test_dashboard_refuses_a_cookie_older_than_twelve_hours(runtime: Runtime) -> None:
    # Given a cookie correctly signed, but issued 12 h and a minute ago
    client = _client(runtime)
    old = gate.cookie_value(KEY, int(time.time()) - 12 * 3600 - 60)
    # When it is presented (a browser that kept it past its Max-Age)
    page = client.get("/dashboard", headers=_cookie(old))
    # Then the person is sent to sign in again
    assert page.status_code == 303 and page.headers["location"] == "/dashboard/login"


def test_dashboard_asks_the_old_cookie_format_to_sign_in_again(runtime: Runtime) -> None:
    # Given the cookie an earlier version set: a never-expiring keyed digest of the key
    legacy = hmac.new(KEY.encode(), b"harness-dashboard-v1", hashlib.sha256).hexdigest()
    # When it is presented
    page = _client(runtime).get("/dashboard", headers=_cookie(legacy))
    # Then the person is sent to sign in again
    assert page.status_code == 303 and page.headers["location"] == "/dashboard/login"


def test_sign_out_clears_the_cookie(runtime: Runtime) -> None:
    # Given a signed-in person
    client = _client(runtime, public_url="https://harness.example.org")
    client.post("/dashboard/login", data={"key": KEY})
    # When they press "Sign out"
    response = client.post("/dashboard/logout")
    # Then they are sent to the sign-in form and the cookie is expired on the same path
    assert response.status_code == 303 and response.headers["location"] == "/dashboard/login"
    attributes = _cookie_attributes(response.headers["set-cookie"])
    assert attributes["max-age"] == "0" and attributes["path"] == "/dashboard", attributes
    assert "secure" in attributes and "httponly" in attributes, attributes


def test_sign_in_after_ten_failures_answers_429_with_retry_after(runtime: Runtime) -> None:
    # Given an address that got the key wrong ten times
    client = _client(runtime)
    for _ in range(MAX_FAILURES):
        assert client.post("/dashboard/login", data={"key": "guess"}).status_code == 200
    # When it tries again, even with the right key
    response = client.post("/dashboard/login", data={"key": KEY})
    # Then it is refused 429 with a Retry-After within the 15-minute window, and no cookie
    assert response.status_code == 429, response.text
    assert 0 < int(response.headers["retry-after"]) <= 15 * 60
    assert "set-cookie" not in response.headers


def test_sign_in_with_a_form_that_is_not_utf8_is_400(runtime: Runtime) -> None:
    # Given a sign-in form whose bytes are not UTF-8
    client = _client(runtime)
    # When it is posted
    response = client.post(
        "/dashboard/login",
        content=b"key=\xff\xfe",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    # Then it is refused 400 saying why
    assert response.status_code == 400 and "UTF-8" in response.text, response.text


def test_dashboard_with_a_non_ascii_token_or_cookie_asks_to_sign_in(runtime: Runtime) -> None:
    # Given a client sending a Bearer token, or a cookie, outside ASCII
    client = _client(runtime)
    # When it opens the dashboard
    by_token = client.get("/dashboard", headers={b"Authorization": "Bearer clé".encode()})
    by_cookie = client.get("/dashboard", headers={b"Cookie": f"{gate.COOKIE}=clé".encode()})
    # Then it is sent to the sign-in form, not answered 500
    for page in (by_token, by_cookie):
        assert page.status_code == 303, page.text
