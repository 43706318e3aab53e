"""The guard keeps tests away from real model APIs."""

from __future__ import annotations

import os

import pytest

from harness.llm.anthropic import AnthropicProvider
from harness.llm.errors import PermanentModelError
from harness.llm.guard import FORBID_ENV, is_loopback_url
from harness.llm.openai import OpenAIProvider


def test_guard_is_on_in_every_test() -> None:
    assert os.environ.get(FORBID_ENV) == "1"


@pytest.mark.parametrize(
    "url", ["https://api.anthropic.com", "http://10.0.0.5:8080", "http://example.com"]
)
def test_guard_refuses_a_non_loopback_base_url(url: str) -> None:
    with pytest.raises(PermanentModelError, match="real model calls are forbidden under tests"):
        AnthropicProvider(api_key="k", base_url=url)
    with pytest.raises(PermanentModelError, match="real model calls are forbidden under tests"):
        OpenAIProvider(api_key="k", base_url=f"{url}/v1")


def test_guard_refuses_the_default_base_url() -> None:
    with pytest.raises(PermanentModelError):
        AnthropicProvider(api_key="k")
    with pytest.raises(PermanentModelError):
        OpenAIProvider(api_key="k")


def test_guard_allows_loopback_base_urls() -> None:
    for url in ("http://127.0.0.1:1", "http://localhost:1", "http://[::1]:1", "http://127.8.9.1"):
        assert is_loopback_url(url), url
        AnthropicProvider(api_key="k", base_url=url).close()


def test_guard_off_lets_a_provider_be_built_for_the_real_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Construction sends nothing; only complete() would.
    monkeypatch.delenv(FORBID_ENV)

    AnthropicProvider(api_key="k").close()
