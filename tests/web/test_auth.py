"""The events API wants `Authorization: Bearer $HARNESS_API_KEY`, and never repeats it."""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import create_app
from tests.web.conftest import API_KEY

EVENT = {"name": "app/ping"}


def test_events_without_authorization_are_refused_with_a_bearer_challenge(
    client: TestClient, runtime: Runtime
) -> None:
    response = client.post("/api/events", json=EVENT)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert runtime.redis.xlen(runtime.keys.events) == 0, "nothing may be published"


@pytest.mark.parametrize(
    "header",
    [f"Bearer {API_KEY}x", "Bearer ", f"Basic {API_KEY}", API_KEY, "Bearer wrong"],
)
def test_events_with_a_wrong_token_are_refused(
    client: TestClient, runtime: Runtime, header: str
) -> None:
    response = client.post("/api/events", json=EVENT, headers={"Authorization": header})
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_events_with_the_right_token_are_accepted(client: TestClient, auth: dict[str, str]) -> None:
    response = client.post("/api/events", json=EVENT, headers=auth)
    assert response.status_code == 202, response.text


def test_events_api_is_disabled_without_an_api_key(runtime: Runtime) -> None:
    # Given no HARNESS_API_KEY
    settings = Settings(_env_file=None, harness_api_key=None)  # type: ignore[call-arg]
    with TestClient(create_app(lambda: runtime, settings)) as client:
        # When any token is presented
        response = client.post(
            "/api/events", json=EVENT, headers={"Authorization": "Bearer anything"}
        )
    # Then the API says it is disabled and how to enable it
    assert response.status_code == 503
    assert response.json() == {"detail": "API disabled: set HARNESS_API_KEY"}
    assert runtime.redis.xlen(runtime.keys.events) == 0


def test_the_api_key_never_appears_in_responses_or_logs(
    client: TestClient, auth: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    # Given every logger capturing at DEBUG
    caplog.set_level(logging.DEBUG)
    # When requests succeed, fail authentication and fail validation
    responses = [
        client.post("/api/events", json=EVENT, headers=auth),
        client.post("/api/events", json=EVENT, headers={"Authorization": f"Bearer {API_KEY}!"}),
        client.post("/api/events", json={"name": ""}, headers=auth),
        client.post("/api/events", content=b"{", headers=auth),
        client.get("/healthz", headers=auth),
    ]
    # Then neither the key nor a near-miss token shows up anywhere
    assert [r.status_code for r in responses] == [202, 401, 422, 400, 200]
    assert caplog.records, "expected the requests to be logged at all"
    for response in responses:
        assert API_KEY not in response.text
        assert API_KEY not in str(response.headers)
    assert API_KEY not in caplog.text
