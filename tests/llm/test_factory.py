"""Building providers from settings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.llm.anthropic import AnthropicProvider
from harness.llm.errors import PermanentModelError, TransientModelError
from harness.llm.factory import build_fallback_provider, build_provider
from harness.llm.openai import OpenAIProvider
from harness.llm.provider import ModelProvider
from harness.llm.settings import ModelSettings
from harness.llm.types import Message
from tests.fakes.model_server import ModelServer, Reply

ENV_NAMES = [
    "LLM_PROVIDER",
    "AGENT_MODEL",
    "AGENT_MAX_TOKENS",
    "AGENT_MODEL_TIMEOUT",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "FALLBACK_LLM_PROVIDER",
    "FALLBACK_AGENT_MODEL",
]
LOCAL = "http://127.0.0.1:9"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def built() -> Iterator[list[ModelProvider]]:
    """Collects providers a test builds and closes them afterwards."""
    providers: list[ModelProvider] = []
    yield providers
    for provider in providers:
        provider.close()


def _settings(**values: Any) -> ModelSettings:
    return ModelSettings(_env_file=None, **values)  # type: ignore[call-arg]


def _keep(built: list[ModelProvider], provider: ModelProvider | None) -> ModelProvider:
    assert provider is not None, "expected a provider"
    built.append(provider)
    return provider


def test_build_provider_returns_none_without_key_or_base_url() -> None:
    assert build_provider(_settings()) is None
    assert build_provider(_settings(llm_provider="openai", anthropic_api_key="k")) is None
    assert build_provider(_settings(anthropic_api_key="  ", anthropic_base_url="")) is None


def test_build_provider_defaults_to_anthropic_and_its_default_model(
    built: list[ModelProvider],
) -> None:
    provider = _keep(built, build_provider(_settings(anthropic_base_url=LOCAL)))

    assert isinstance(provider, AnthropicProvider)
    assert provider.model == "claude-sonnet-5-5"


def test_build_provider_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch, built: list[ModelProvider]
) -> None:
    monkeypatch.setenv("LLM_PROVIDER", "openai")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{LOCAL}/v1")
    monkeypatch.setenv("AGENT_MODEL", "local-llama")

    provider = _keep(built, build_provider(_settings()))

    assert isinstance(provider, OpenAIProvider)
    assert provider.model == "local-llama"


def test_build_provider_uses_the_openai_default_model(built: list[ModelProvider]) -> None:
    settings = _settings(llm_provider="openai", openai_base_url=f"{LOCAL}/v1")

    assert _keep(built, build_provider(settings)).model == "gpt-5.4-mini"


def test_build_provider_with_a_key_only_targets_the_real_api_and_the_guard_refuses() -> None:
    with pytest.raises(PermanentModelError, match="real model calls are forbidden"):
        build_provider(_settings(anthropic_api_key="sk-ant-test"))


def test_build_fallback_provider_is_none_unless_configured() -> None:
    assert build_fallback_provider(_settings(anthropic_base_url=LOCAL)) is None


def test_build_fallback_provider_uses_the_fallback_provider_and_model(
    built: list[ModelProvider],
) -> None:
    settings = _settings(
        anthropic_base_url=LOCAL,
        openai_base_url=f"{LOCAL}/v1",
        fallback_llm_provider="openai",
    )

    fallback = _keep(built, build_fallback_provider(settings))

    assert isinstance(fallback, OpenAIProvider)
    assert fallback.model == "gpt-5.4-mini"


def test_build_fallback_provider_with_only_a_model_keeps_the_main_provider(
    built: list[ModelProvider],
) -> None:
    settings = _settings(anthropic_base_url=LOCAL, fallback_agent_model="claude-haiku-5-5")

    fallback = _keep(built, build_fallback_provider(settings))

    assert isinstance(fallback, AnthropicProvider)
    assert fallback.model == "claude-haiku-5-5"


@pytest.mark.parametrize("provider_name", ["anthropic", "openai"])
def test_a_model_answer_that_stalls_past_agent_model_timeout_fails_as_transient(
    built: list[ModelProvider], model_server: ModelServer, provider_name: str
) -> None:
    # Given a provider built with a half-second AGENT_MODEL_TIMEOUT
    url = model_server.url if provider_name == "anthropic" else model_server.openai_url
    settings = _settings(
        llm_provider=provider_name,
        agent_model_timeout=0.5,
        **{f"{provider_name}_api_key": model_server.api_key, f"{provider_name}_base_url": url},
    )
    provider = _keep(built, build_provider(settings))
    # When the model stops sending after its first streamed event
    model_server.script(Reply.answer("too late", delay=30))
    # Then the call fails as transient (its step is retried) instead of waiting on
    with pytest.raises(TransientModelError):
        provider.complete(system="s", messages=[Message.user("hi")])


@pytest.mark.parametrize("provider_name", ["anthropic", "openai"])
@pytest.mark.parametrize("temperature", [0.3, None])
def test_a_provider_sends_its_temperature_only_when_one_is_set(
    built: list[ModelProvider],
    model_server: ModelServer,
    provider_name: str,
    temperature: float | None,
) -> None:
    # Given a provider built with (or without) a temperature
    url = model_server.url if provider_name == "anthropic" else model_server.openai_url
    settings = _settings(
        llm_provider=provider_name,
        **{f"{provider_name}_api_key": model_server.api_key, f"{provider_name}_base_url": url},
    )
    provider = _keep(built, build_provider(settings, temperature=temperature))
    model_server.script(Reply.answer("ok"))
    # When it calls the model
    provider.complete(system="s", messages=[Message.user("hi")])
    # Then the request carries that temperature, and none at all when unset
    [request] = [r.body for r in model_server.requests]
    if temperature is None:
        assert "temperature" not in request, f"sent a temperature nobody set: {request}"
    else:
        assert request["temperature"] == temperature, request
