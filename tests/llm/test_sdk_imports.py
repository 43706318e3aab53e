"""Building a provider and rendering its requests import no model SDK: a worker on the model
gateway's path does only that, and each SDK costs tens of MB a process. Checked in a fresh
interpreter by `sys.modules`, never by memory or time."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fresh_imports import loaded_after

SDKS = ("anthropic", "openai")
BUILD_AND_PREPARE = """
from harness.llm.factory import build_provider
from harness.llm.settings import ModelSettings
from harness.llm.types import Message

settings = ModelSettings(
    _env_file=None, llm_provider={provider!r}, agent_model="some-model",
    anthropic_base_url="http://127.0.0.1:9", openai_base_url="http://127.0.0.1:9",
)
provider = build_provider(settings)
assert provider is not None and provider.name == {provider!r}, provider
wire = provider.prepare(
    system="You are terse.", messages=[Message(role="user", text="Say hi.")]
)
assert "Say hi." in wire, wire
provider.max_tokens, provider.temperature, provider.model
provider.close()
"""


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_building_preparing_and_closing_a_provider_imports_no_sdk(
    provider: str, tmp_path: Path
) -> None:
    # Given a fresh interpreter
    # When it builds the provider through the factory, renders a request, reads what the
    # gateway path reads of it and closes it
    loaded = loaded_after(BUILD_AND_PREPARE.format(provider=provider), SDKS, tmp_path)
    # Then neither SDK was imported: only a call loads one
    assert loaded == [], f"building and preparing the {provider} provider imported {loaded}"
