"""The app factory stays open for routers mounted by others (channel webhooks)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.testclient import TestClient
from starlette.routing import Match

from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import WebContext, create_app, web_context
from harness.web.app import default_routers


def test_extra_routers_are_mounted_and_reach_the_runtime(
    runtime: Runtime, settings: Settings
) -> None:
    # Given a router that reads through the app's context
    router = APIRouter()

    @router.get("/webhooks/probe")
    def probe(context: Annotated[WebContext, Depends(web_context)]) -> dict[str, str]:
        context.runtime_factory().redis.set("probe", "seen")
        return {"agent": context.settings.agent_name}

    # When the app is built with it
    with TestClient(create_app(lambda: runtime, settings, routers=[router])) as client:
        response = client.get("/webhooks/probe")
    # Then the route answers with the app's settings and runtime
    assert response.status_code == 200
    assert response.json() == {"agent": settings.agent_name}
    assert runtime.redis.get("probe") == "seen"


def test_api_docs_are_not_served_by_default(runtime: Runtime, settings: Settings) -> None:
    # Given the app with default settings
    with TestClient(create_app(lambda: runtime, settings)) as client:
        # When anyone asks for the schema or the docs pages
        answers = {path: client.get(path).status_code for path in _DOCS}
    # Then none is there
    assert answers == dict.fromkeys(_DOCS, 404), answers


def test_api_docs_are_served_when_enabled(runtime: Runtime, settings: Settings) -> None:
    # Given the app with WEB_API_DOCS on
    enabled = settings.model_copy(update={"web_api_docs": True})
    with TestClient(create_app(lambda: runtime, enabled)) as client:
        # When the schema and the docs pages are asked for
        answers = {path: client.get(path).status_code for path in _DOCS}
        schema = client.get("/openapi.json").json()
    # Then they are served, the schema naming the API
    assert answers == dict.fromkeys(_DOCS, 200), answers
    assert "/api/events" in schema["paths"]


_DOCS = ("/openapi.json", "/docs", "/redoc")


def test_a_webhook_passes_over_only_the_probes_metrics_and_events_routes(
    runtime: Runtime, settings: Settings
) -> None:
    # Given the app as `harness web` builds it
    app = create_app(lambda: runtime, settings, routers=default_routers())
    scope = {"type": "http", "method": "POST", "path": "/webhooks/telegram", "root_path": ""}

    # When the routes are tried in order for a webhook
    routes = app.router.routes
    taken = [route.matches(scope)[0] for route in routes].index(Match.FULL)
    before = [getattr(route, "path", "") for route in routes[:taken]]

    # Then the webhook's router takes it before any of the chat API's or the dashboard's paths
    # is tried (30 µs of matching); only probes, /metrics, /api/events and FastAPI's own
    # routes (their number differs between FastAPI versions) come first
    assert not [p for p in before if p.startswith(("/api/chat", "/dashboard"))], before
