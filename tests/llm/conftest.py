"""Providers wired to the scripted model server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.llm.anthropic import AnthropicProvider
from harness.llm.openai import OpenAIProvider
from harness.llm.provider import ModelProvider
from tests.fakes.model_server import ModelServer


@pytest.fixture
def anthropic_provider(model_server: ModelServer) -> Iterator[AnthropicProvider]:
    provider = AnthropicProvider(
        api_key=model_server.api_key, base_url=model_server.url, max_tokens=1024, timeout=10.0
    )
    yield provider
    provider.close()


@pytest.fixture
def openai_provider(model_server: ModelServer) -> Iterator[OpenAIProvider]:
    provider = OpenAIProvider(
        api_key=model_server.api_key,
        base_url=model_server.openai_url,
        max_tokens=1024,
        timeout=10.0,
    )
    yield provider
    provider.close()


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> ModelProvider:
    """Each provider in turn, for behaviour both must share."""
    fixture: ModelProvider = request.getfixturevalue(f"{request.param}_provider")
    return fixture
