"""The app factory stays open for routers mounted by others (channel webhooks)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.testclient import TestClient

from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import WebContext, create_app, web_context


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
