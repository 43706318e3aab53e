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


GATEWAY_START = """
import time
import fakeredis
from harness.agent.gateway import ModelGateway
from harness.runtime import Runtime
from harness.runtime.functions import FunctionRegistry
from harness.runtime.kicker import RecordingKicker
from harness.settings import Settings

settings = Settings(
    _env_file=None, anthropic_api_key="test-key", anthropic_base_url="http://127.0.0.1:9"
)
runtime = Runtime(
    redis=fakeredis.FakeRedis(decode_responses=True), registry=FunctionRegistry(),
    kicker=RecordingKicker(),
)
gateway = ModelGateway(runtime, settings, idle_s=0.05)
gateway.start()
deadline = time.monotonic() + 60
while gateway._loop is None and time.monotonic() < deadline:
    time.sleep(0.01)
assert gateway._loop is not None, "the gateway never served"
gateway.stop()
"""


def test_a_gateway_loads_the_configured_sdk_before_it_serves(tmp_path: Path) -> None:
    # Given settings that reach Anthropic only, When a gateway starts serving (no call yet)
    loaded = loaded_after(GATEWAY_START, SDKS, tmp_path)
    # Then that SDK was loaded up front (a first call importing it would hold the loop and
    # every lease renewal for seconds), and the other one not
    assert loaded == ["anthropic"], loaded
