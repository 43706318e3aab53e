"""Building the configured `ModelProvider` from settings.

Each provider's module is imported when a provider of that kind is built, not with this
module, and its SDK (most of a second to import, tens of MB) only when the provider makes a
call: commands that only read settings or show the default model, and a worker that only
renders requests for the model gateway, load no SDK."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pydantic import SecretStr

from harness.errors import ConfigurationError
from harness.llm.guard import check_base_url
from harness.llm.settings import DEFAULT_BASE_URLS, DEFAULT_MODELS
from harness.llm.token_field import MaxTokensField

if TYPE_CHECKING:
    from harness.llm.provider import ModelProvider

__all__ = [
    "DEFAULT_MODELS",
    "ModelChoice",
    "ModelSettingsLike",
    "build_fallback_provider",
    "build_provider",
    "model_choice",
    "sdk_modules",
]


class ModelSettingsLike(Protocol):
    """The fields `build_provider` reads: `ModelSettings`, or any settings object that has
    merged them."""

    @property
    def llm_provider(self) -> str: ...
    @property
    def agent_model(self) -> str | None: ...
    @property
    def agent_max_tokens(self) -> int: ...
    @property
    def agent_model_timeout(self) -> float: ...
    @property
    def anthropic_api_key(self) -> SecretStr | None: ...
    @property
    def anthropic_base_url(self) -> str | None: ...
    @property
    def openai_api_key(self) -> SecretStr | None: ...
    @property
    def openai_base_url(self) -> str | None: ...
    @property
    def openai_max_tokens_field(self) -> MaxTokensField | None: ...
    @property
    def fallback_llm_provider(self) -> str | None: ...
    @property
    def fallback_agent_model(self) -> str | None: ...


def build_provider(
    settings: ModelSettingsLike, *, temperature: float | None = None
) -> ModelProvider | None:
    """The provider `LLM_PROVIDER` names, for `AGENT_MODEL` or that provider's default model,
    sampling at `temperature` (None: the provider's default, not sent).

    Returns None when the chosen provider has neither an API key nor a base URL configured
    (blank values count as unset); the agent then replies with setup instructions. Raises
    `ConfigurationError` for an unknown provider name and `PermanentModelError` when real
    model calls are forbidden and the base URL is not on loopback.
    """
    return _build(settings, settings.llm_provider, settings.agent_model, temperature)


def build_fallback_provider(
    settings: ModelSettingsLike, *, temperature: float | None = None
) -> ModelProvider | None:
    """The provider to try when the main one keeps failing, or None if none is configured;
    `temperature` as for `build_provider`.

    `FALLBACK_LLM_PROVIDER` defaults to `LLM_PROVIDER` and `FALLBACK_AGENT_MODEL` to that
    provider's default model; with both unset there is no fallback. Credentials and limits
    are shared with the main provider's settings of the same name.
    """
    if not settings.fallback_llm_provider and not _text(settings.fallback_agent_model):
        return None
    name = settings.fallback_llm_provider or settings.llm_provider
    return _build(settings, name, settings.fallback_agent_model, temperature)


@dataclass(frozen=True)
class ModelChoice:
    """Which provider and model `build_provider` would build, and how to reach it
    (`base_url` None: the provider's default)."""

    provider: str
    model: str
    api_key: str | None
    base_url: str | None


def model_choice(settings: ModelSettingsLike) -> ModelChoice | None:
    """What `build_provider(settings)` would build, without building it or importing its SDK
    (`harness doctor --offline`). None, `ConfigurationError` and `PermanentModelError` exactly
    as `build_provider`."""
    return _choose(settings, settings.llm_provider, settings.agent_model)


def sdk_modules(settings: ModelSettingsLike) -> list[str]:
    """The SDK modules of the providers `settings` can reach (an API key or a base URL set),
    for a process that will make calls to load up front (the model gateway). Imports
    nothing; never raises."""
    found = []
    for name, key, url in (
        ("anthropic", settings.anthropic_api_key, settings.anthropic_base_url),
        ("openai", settings.openai_api_key, settings.openai_base_url),
    ):
        if _secret(key) is not None or _text(url) is not None:
            found.append(name)
    return found


def _choose(settings: ModelSettingsLike, name: str, model: str | None) -> ModelChoice | None:
    if name == "anthropic":
        key, url = _secret(settings.anthropic_api_key), _text(settings.anthropic_base_url)
    elif name == "openai":
        key, url = _secret(settings.openai_api_key), _text(settings.openai_base_url)
    else:
        raise ConfigurationError(f"LLM_PROVIDER must be 'anthropic' or 'openai', not {name!r}")
    if key is None and url is None:
        return None
    check_base_url(url or DEFAULT_BASE_URLS[name])
    return ModelChoice(name, _text(model) or DEFAULT_MODELS[name], key, url)


def build_named(
    settings: ModelSettingsLike, name: str, model: str, temperature: float | None
) -> ModelProvider:
    """The provider of wire API `name` for `model` at `temperature`, with the credentials and
    limits `settings` give that API: how the model gateway makes a call a run recorded (the
    record names the model, never a credential). Raises `ConfigurationError` when `name` is
    unknown or has neither an API key nor a base URL here."""
    built = _build(settings, name, model, temperature)
    if built is None:
        raise ConfigurationError(f"no API key or base URL is configured for {name!r} here")
    return built


def _build(
    settings: ModelSettingsLike, name: str, model: str | None, temperature: float | None
) -> ModelProvider | None:
    choice = _choose(settings, name, model)
    if choice is None:
        return None
    # Imported here: only the chosen provider's module is needed (each loads httpx2; its SDK
    # waits for the first call).
    if choice.provider == "anthropic":
        from harness.llm import anthropic as anthropic_provider

        return anthropic_provider.AnthropicProvider(
            api_key=choice.api_key,
            model=choice.model,
            base_url=choice.base_url,
            max_tokens=settings.agent_max_tokens,
            timeout=settings.agent_model_timeout,
            temperature=temperature,
        )
    from harness.llm import openai as openai_provider

    return openai_provider.OpenAIProvider(
        api_key=choice.api_key,
        model=choice.model,
        base_url=choice.base_url,
        max_tokens=settings.agent_max_tokens,
        max_tokens_field=settings.openai_max_tokens_field,
        timeout=settings.agent_model_timeout,
        temperature=temperature,
    )


def _secret(value: SecretStr | None) -> str | None:
    return _text(value.get_secret_value()) if value is not None else None


def _text(value: str | None) -> str | None:
    return value.strip() if value and value.strip() else None
