"""Fixtures for the web tests: the app on a runtime backed by fakeredis, and a client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from harness.runtime import Runtime
from harness.settings import Settings
from harness.web import create_app

API_KEY = "s3cret-api-key-0123456789"


@pytest.fixture
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        harness_api_key=SecretStr(API_KEY),
        agent_workspace=tmp_path_factory.mktemp("workspace"),
    )


@pytest.fixture
def client(runtime: Runtime, settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(lambda: runtime, settings)) as test_client:
        yield test_client


@pytest.fixture
def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {API_KEY}"}
