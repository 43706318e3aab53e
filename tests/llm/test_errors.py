"""SDK errors become our hierarchy at the provider seam, without leaking the API key."""

from __future__ import annotations

import socket

import pytest

from harness.errors import NonRetriableError
from harness.llm.anthropic import AnthropicProvider
from harness.llm.errors import (
    ContextOverflowError,
    ModelError,
    PermanentModelError,
    TransientModelError,
)
from harness.llm.openai import OpenAIProvider
from harness.llm.provider import ModelProvider
from harness.llm.types import Message
from tests.fakes.model_server import ModelServer, Reply

HELLO = [Message.user("hello")]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply.error(429, retry_after=7), TransientModelError),
        (Reply.error(500), TransientModelError),
        (Reply.error(503), TransientModelError),
        (Reply.context_overflow(), ContextOverflowError),
        (Reply.error(400, "messages.0: bad field"), PermanentModelError),
        (Reply.error(403), PermanentModelError),
        (Reply.error(404), PermanentModelError),
    ],
    ids=["429", "500", "503", "400-overflow", "400", "403", "404"],
)
def test_provider_classifies_error_status(
    provider: ModelProvider,
    model_server: ModelServer,
    reply: Reply,
    expected: type[ModelError],
) -> None:
    model_server.script(reply)

    with pytest.raises(ModelError) as caught:
        provider.complete(system="s", messages=HELLO)

    assert type(caught.value) is expected, f"{reply.status} gave {caught.value!r}"
    assert caught.value.status_code == reply.status
    assert caught.value.provider == provider.name
    assert len(model_server.requests) == 1, "the provider layer must not retry"


def test_provider_passes_on_the_retry_after_hint(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    model_server.script(Reply.error(429, retry_after=7))

    with pytest.raises(TransientModelError) as caught:
        provider.complete(system="s", messages=HELLO)

    assert caught.value.retry_after == 7.0


def test_anthropic_provider_treats_529_overloaded_as_transient(
    anthropic_provider: AnthropicProvider, model_server: ModelServer
) -> None:
    model_server.script(Reply.error(529))

    with pytest.raises(TransientModelError, match="overloaded_error"):
        anthropic_provider.complete(system="s", messages=HELLO)


def test_openai_provider_treats_insufficient_quota_as_permanent(
    openai_provider: OpenAIProvider, model_server: ModelServer
) -> None:
    model_server.script(
        Reply.error(429, "You exceeded your quota", error_code="insufficient_quota")
    )

    with pytest.raises(PermanentModelError, match="insufficient_quota"):
        openai_provider.complete(system="s", messages=HELLO)


def test_openai_provider_treats_an_in_stream_error_as_transient(
    openai_provider: OpenAIProvider, model_server: ModelServer
) -> None:
    model_server.script(Reply.error(500, "The server had an error", mid_stream=True))

    with pytest.raises(TransientModelError, match="The server had an error"):
        openai_provider.complete(system="s", messages=HELLO)


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_provider_reports_a_wrong_key_as_permanent_without_the_key(
    model_server: ModelServer, name: str
) -> None:
    # Given a provider configured with a wrong (and recognisable) key
    secret = "sk-secret-DO-NOT-LEAK-1234567890"
    provider: ModelProvider = (
        AnthropicProvider(api_key=secret, base_url=model_server.url)
        if name == "anthropic"
        else OpenAIProvider(api_key=secret, base_url=model_server.openai_url)
    )

    # When it calls the model
    with pytest.raises(PermanentModelError) as caught:
        provider.complete(system="s", messages=HELLO)
    provider.close()

    # Then the error is a 401 that does not repeat the key
    assert caught.value.status_code == 401
    assert isinstance(caught.value, NonRetriableError)
    assert secret not in str(caught.value) and secret not in repr(caught.value)


def test_redaction_hides_a_key_the_server_echoes(model_server: ModelServer) -> None:
    secret = model_server.api_key
    model_server.script(Reply.error(400, f"bad key {secret} in body"))
    provider = OpenAIProvider(api_key=secret, base_url=model_server.openai_url)

    with pytest.raises(PermanentModelError) as caught:
        provider.complete(system="s", messages=HELLO)
    provider.close()

    assert secret not in str(caught.value)
    assert "[redacted]" in str(caught.value)


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_provider_reports_connection_refused_as_transient(name: str) -> None:
    # Given a loopback port where nothing listens
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider: ModelProvider = (
        AnthropicProvider(api_key="k", base_url=url)
        if name == "anthropic"
        else OpenAIProvider(api_key="k", base_url=f"{url}/v1")
    )

    with pytest.raises(TransientModelError) as caught:
        provider.complete(system="s", messages=HELLO)
    provider.close()

    assert caught.value.status_code is None
    assert not isinstance(caught.value, NonRetriableError)
