"""Every console page answers a Redis outage with a 503 page, not a 500."""

from __future__ import annotations

import logging

import pytest
from fastapi import APIRouter
from fastapi.testclient import TestClient

from harness.errors import BusUnavailableError
from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import create_app
from tests.runtime_fixtures import UNREACHABLE_REDIS_PASSWORD
from tests.web.console_client import with_bearer

PAGES = [
    ("GET", "/dashboard"),
    ("GET", "/dashboard/actions"),
    ("GET", "/dashboard/charts"),
    ("GET", "/dashboard/conversations"),
    ("GET", "/dashboard/conversations/telegram:1"),
    ("GET", "/dashboard/runs/r1"),
    ("GET", "/dashboard/runs/r1/actions"),
    ("POST", "/dashboard/runs/r1/cancel"),
    ("POST", "/dashboard/approvals/a1"),
]


@pytest.mark.parametrize(("method", "path"), PAGES)
def test_console_page_with_redis_down_is_a_503_page_and_one_log_line(
    unreachable_runtime: Runtime, caplog: pytest.LogCaptureFixture, method: str, path: str
) -> None:
    # Given a fleet whose Redis does not answer
    client = with_bearer(unreachable_runtime)
    # When a signed-in operator opens the page or presses the button
    with caplog.at_level(logging.WARNING):
        response = client.request(method, path, data={"decision": "approve"})
    # Then it is a page saying so, 503 with Retry-After, naming no password
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "5"
    assert "Redis does not answer" in response.text and "ConnectionError" in response.text
    assert UNREACHABLE_REDIS_PASSWORD not in response.text
    # And the log says it once, with no traceback
    lines = [r for r in caplog.records if "Redis unavailable" in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None, caplog.records


def test_api_route_letting_a_bus_error_escape_answers_503_json(settings: Settings) -> None:
    # Given an API route that lets the bus's error escape
    router = APIRouter()

    @router.get("/api/probe")
    def probe() -> None:
        raise BusUnavailableError("redis at 10.0.0.1 refused") from ConnectionError()

    client = TestClient(create_app(settings=settings, routers=[router]))
    # When it is called
    response = client.get("/api/probe")
    # Then it is the API's 503 with Retry-After, naming no host
    assert response.status_code == 503, response.text
    assert response.json() == {"detail": "event bus unavailable; retry later"}
    assert response.headers["retry-after"] == "5"
