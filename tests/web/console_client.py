"""A signed-in TestClient on the console, and the CSRF token of a page's forms."""

from __future__ import annotations

from bs4 import BeautifulSoup
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr

from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import create_app
from harness.web import dashboard as dashboard_routes

KEY = "console-key-0123456789"


def _app(runtime: Runtime) -> FastAPI:
    settings = Settings(_env_file=None, harness_api_key=SecretStr(KEY))  # type: ignore[call-arg]
    return create_app(lambda: runtime, settings=settings, routers=[dashboard_routes.router])


def with_bearer(runtime: Runtime) -> TestClient:
    """A client of the dashboard on `runtime` sending the key as a Bearer token (no sign-in:
    works when Redis is down)."""
    return TestClient(_app(runtime), headers={"Authorization": f"Bearer {KEY}"})


def signed_in(runtime: Runtime) -> TestClient:
    """A client of the dashboard on `runtime`, signed in through the form (a cookie)."""
    client = TestClient(_app(runtime), follow_redirects=False)
    response = client.post("/dashboard/login", data={"key": KEY})
    assert response.status_code == 303, response.text
    return client


def soup(client: TestClient, path: str) -> BeautifulSoup:
    """The page at `path`, which must answer 200."""
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code, response.text[:300])
    return BeautifulSoup(response.text, "html.parser")


def csrf(client: TestClient, path: str) -> str:
    """The CSRF token of the first form on the page at `path`."""
    field = soup(client, path).select_one("input[name=csrf]")
    assert field is not None, f"no form on {path}"
    return str(field["value"])
