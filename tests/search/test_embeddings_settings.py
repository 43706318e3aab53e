"""Which embedder the settings choose, and that the `openai` SDK is loaded only for one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from harness.errors import ConfigurationError
from harness.search.embeddings import embedder_from_settings
from harness.settings import Settings
from tests.fakes.model_server import ModelServer

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import sys
from harness.search import hybrid, tool, vectors
from harness.errors import ConfigurationError
from harness.search.embeddings import embedder_from_settings
from harness.settings import Settings
settings = Settings(_env_file=None, embeddings_provider={provider!r})
embedder = embedder_from_settings(settings)
print(type(embedder).__name__, "openai" in sys.modules)
"""


def _probe(provider: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(provider=provider)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={
            "PYTHONPATH": str(ROOT),
            "HARNESS_FORBID_REAL_MODELS": "1",
            "EMBEDDINGS_BASE_URL": "http://127.0.0.1:9/v1",
            "EMBEDDINGS_API_KEY": "not-needed",
        },
    )
    return done.stdout.strip()


def test_search_without_embeddings_never_imports_openai() -> None:
    # Given a fresh interpreter with EMBEDDINGS_PROVIDER unset (none)
    # When it loads the search tool and asks the settings for an embedder
    # Then there is none, and the openai SDK was not imported
    assert _probe("none") == "NoneType False"


def test_embeddings_provider_openai_loads_the_sdk_on_request() -> None:
    # Given EMBEDDINGS_PROVIDER=openai
    # When the settings are asked for an embedder
    # Then it is the OpenAI one (the SDK imported only now)
    assert _probe("openai") == "OpenAIEmbedder True"


def test_embeddings_key_falls_back_to_the_openai_key(model_server: ModelServer) -> None:
    # Given embeddings settings with only OPENAI_API_KEY set, for the OPENAI_BASE_URL endpoint
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        embeddings_provider="openai",
        embeddings_base_url=model_server.openai_url,
        openai_base_url=model_server.openai_url + "/",
        openai_api_key=SecretStr(model_server.api_key),
        embeddings_model="fake-embed",
    )
    embedder = embedder_from_settings(settings)
    assert embedder is not None
    # When it embeds
    vectors = embedder.embed(["a", "b"])
    # Then the endpoint accepted that key, and the model asked for is the configured one
    assert len(vectors) == 2
    sent = [r for r in model_server.requests if r.api == "embeddings"]
    assert sent[0].headers["authorization"] == f"Bearer {model_server.api_key}"
    assert sent[0].body["model"] == "fake-embed"


def test_embeddings_on_another_endpoint_never_get_the_openai_key() -> None:
    # Given EMBEDDINGS_BASE_URL naming another endpoint than OPENAI_BASE_URL, no
    # EMBEDDINGS_API_KEY, and an OPENAI_API_KEY
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        embeddings_provider="openai",
        embeddings_base_url="http://127.0.0.1:9/v1",
        openai_api_key=SecretStr("sk-openai-secret"),
    )
    # When the settings are asked for an embedder
    # Then they refuse in one line naming the setting to set, and never the key
    with pytest.raises(ConfigurationError, match="set EMBEDDINGS_API_KEY") as refused:
        embedder_from_settings(settings)
    assert "sk-openai-secret" not in str(refused.value) and "\n" not in str(refused.value)


def test_embeddings_on_another_endpoint_send_their_own_key(model_server: ModelServer) -> None:
    # Given an embeddings endpoint of its own with EMBEDDINGS_API_KEY, and an OPENAI_API_KEY
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        embeddings_provider="openai",
        embeddings_base_url=model_server.openai_url,
        embeddings_api_key=SecretStr(model_server.api_key),
        openai_api_key=SecretStr("sk-openai-secret"),
    )
    embedder = embedder_from_settings(settings)
    assert embedder is not None
    # When it embeds / Then the endpoint got the embeddings key, not OpenAI's
    embedder.embed(["a"])
    sent = [r for r in model_server.requests if r.api == "embeddings"]
    assert sent[0].headers["authorization"] == f"Bearer {model_server.api_key}"
