"""Is this model key accepted? One cheap call through the client the fleet uses (`harness.llm`):
a one-token request, the same one `harness doctor` makes, so `ANTHROPIC_BASE_URL` and
`OPENAI_BASE_URL` (a compatible server, the tests' fake) are honoured like everywhere else.

    reason = refusal_of("anthropic", key, base_url=os.environ.get("ANTHROPIC_BASE_URL"))
    if reason is not None: print(reason)   # one line, never the key
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import SecretStr

from harness.errors import ConfigurationError
from harness.llm.errors import ModelError, PermanentModelError
from harness.llm.factory import build_provider
from harness.llm.token_field import MaxTokensField
from harness.llm.types import Message

PROVIDERS = ("anthropic", "openai")
CHECK_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class _KeyOnly:
    """The model settings `build_provider` reads, for one provider and one key."""

    llm_provider: str
    anthropic_api_key: SecretStr | None
    anthropic_base_url: str | None
    openai_api_key: SecretStr | None
    openai_base_url: str | None
    agent_model: str | None = None
    agent_max_tokens: int = 1
    agent_model_timeout: float = CHECK_TIMEOUT_S
    openai_max_tokens_field: MaxTokensField | None = None
    fallback_llm_provider: str | None = None
    fallback_agent_model: str | None = None


def key_variable(provider: str) -> str:
    """The setting that holds `provider`'s key: `ANTHROPIC_API_KEY` or `OPENAI_API_KEY`."""
    return f"{provider.upper()}_API_KEY"


def refusal_of(
    provider: str, key: str, *, base_url: str | None = None, model: str | None = None
) -> str | None:
    """None when `provider` (anthropic or openai) answers a one-token request made with
    `key` (at `base_url` when given; `model`, default: the provider's default); else one line
    saying why not (refused key, unknown model, unreachable server), which never contains the
    key. Never raises."""
    secret = SecretStr(key)
    settings = _KeyOnly(
        llm_provider=provider,
        anthropic_api_key=secret if provider == "anthropic" else None,
        anthropic_base_url=base_url if provider == "anthropic" else None,
        openai_api_key=secret if provider == "openai" else None,
        openai_base_url=base_url if provider == "openai" else None,
        agent_model=model,
    )
    try:
        model_provider = build_provider(settings)
    except (ConfigurationError, ModelError) as exc:
        return str(exc).replace(key, "***")
    if model_provider is None:
        return f"no {key_variable(provider)} given"
    try:
        model_provider.complete(system="", messages=[Message.user("ping")], max_tokens=1)
    except ModelError as exc:
        return _reason(provider, exc).replace(key, "***")
    finally:
        model_provider.close()
    return None


def _reason(provider: str, exc: ModelError) -> str:
    if exc.status_code in (401, 403):
        return (
            f"{provider} refused this key (HTTP {exc.status_code}); check {key_variable(provider)}"
        )
    if isinstance(exc, PermanentModelError):
        return f"{provider} did not accept the check: {exc}"
    return f"could not reach {provider} to check the key: {exc}"
