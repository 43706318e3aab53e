"""The settings the model layer reads, self-contained so they can merge into `Settings`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from harness.llm.token_field import MaxTokensField

ProviderName = Literal["anthropic", "openai"]

DEFAULT_MODELS: dict[str, str] = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-5.4-mini"}
"""The model each provider calls when AGENT_MODEL is unset. Here, not in the provider modules,
so that showing it (`harness agents`) does not import the provider's SDK."""

DEFAULT_BASE_URLS: dict[str, str] = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
}
"""Where each provider's API is when its *_BASE_URL is unset (here for the same reason)."""


class ModelSettings(BaseSettings):
    """Which model to call and how to reach it. Field names map to upper-case environment
    variables (`LLM_PROVIDER`, `AGENT_MODEL`, ...); unset model names mean the provider's
    default model."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True
    )

    llm_provider: ProviderName = Field(default="anthropic")
    agent_model: str | None = Field(
        default=None, description="Model name; unset means the provider's default."
    )
    agent_max_tokens: int = Field(default=8192, ge=1, description="Output tokens per call.")
    agent_model_timeout: float = Field(
        default=600.0,
        gt=0.0,
        description="Seconds a model call may wait to connect or for its next streamed bytes "
        "before it fails as transient (and its step is retried).",
    )
    agent_model_retry_for: float = Field(
        default=300.0,
        ge=0.0,
        description="Seconds a model call failing transiently (rate limited, overloaded, "
        "timed out) keeps being retried, with backoff, after its first failure, even past "
        "the step's retry count; 0 retries it only that count.",
    )
    anthropic_api_key: SecretStr | None = Field(default=None)
    anthropic_base_url: str | None = Field(default=None)
    openai_api_key: SecretStr | None = Field(default=None)
    openai_base_url: str | None = Field(
        default=None, description="For OpenAI-compatible servers; must end in /v1."
    )
    openai_max_tokens_field: MaxTokensField | None = Field(
        default=None,
        description="max_completion_tokens or max_tokens; unset picks by OPENAI_BASE_URL.",
    )
    fallback_llm_provider: ProviderName | None = Field(
        default=None, description="Provider to use when the main one is down; unset disables it."
    )
    fallback_agent_model: str | None = Field(default=None)
