"""A signed-in client of the dashboard on a test runtime, and the page it gets, parsed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from bs4 import BeautifulSoup, Tag
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr

from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import create_app
from harness.web import dashboard as dashboard_routes
from tests.web.served import served

KEY = "secret-key-1"
AUTH = {"Authorization": f"Bearer {KEY}"}


def dashboard_app(runtime: Runtime, state: Path | None = None) -> FastAPI:
    """An app serving only the dashboard on `runtime`, with `state` as HARNESS_STATE_DIR."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, harness_api_key=SecretStr(KEY), harness_state_dir=state
    )
    return create_app(lambda: runtime, settings=settings, routers=[dashboard_routes.router])


def dashboard_client(runtime: Runtime, state: Path | None = None) -> TestClient:
    """A client of `dashboard_app(runtime, state)`; it cannot read a stream that stays open
    (use `live_lines`)."""
    return TestClient(dashboard_app(runtime, state), follow_redirects=False)


def live_lines(
    runtime: Runtime, path: str, until: Callable[[str], bool], state: Path | None = None
) -> list[str]:
    """The lines of the live stream at `path`, read from a real server with the key, up to and
    including the first line for which `until` holds; fails the test unless the stream is a
    200 event stream that reaches such a line within 30 s."""
    lines: list[str] = []
    with served(dashboard_app(runtime, state)) as base, httpx.Client(timeout=30) as client:
        with client.stream("GET", base + path, headers=AUTH) as response:
            assert response.status_code == 200, response.status_code
            assert response.headers["content-type"].startswith("text/event-stream")
            for line in response.iter_lines():
                lines.append(line)
                if until(line):
                    return lines
    raise AssertionError(f"{path}: the stream ended first: {lines}")


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
