"""A signed-in client of the dashboard on a test runtime, and the page it gets, parsed."""

from __future__ import annotations

from pathlib import Path

from bs4 import BeautifulSoup, Tag
from fastapi.testclient import TestClient
from pydantic import SecretStr

from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import create_app
from harness.web import dashboard as dashboard_routes

KEY = "secret-key-1"
AUTH = {"Authorization": f"Bearer {KEY}"}


def dashboard_client(runtime: Runtime, state: Path | None = None) -> TestClient:
    """A client of an app serving only the dashboard, with `state` as HARNESS_STATE_DIR."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, harness_api_key=SecretStr(KEY), harness_state_dir=state
    )
    app = create_app(lambda: runtime, settings=settings, routers=[dashboard_routes.router])
    return TestClient(app, follow_redirects=False)


def soup(client: TestClient, path: str) -> BeautifulSoup:
    """The page at `path`, fetched with the key, parsed; fails the test unless it is a 200."""
    response = client.get(path, headers=AUTH)
    assert response.status_code == 200, f"{path}: {response.status_code} {response.text[:300]}"
    return BeautifulSoup(response.text, "html.parser")


def one(tag: BeautifulSoup | Tag, selector: str) -> Tag:
    """The one element under `tag` matching `selector`; fails the test unless there is one."""
    found = tag.select(selector)
    assert len(found) == 1, f"{selector}: {len(found)} matches in {str(tag)[:300]}"
    return found[0]
