"""A refusal a person must fix (wrong key, spent quota, unknown model) says what to fix, in
words a person can act on, and `failure_reason` takes that sentence back out of a run's error
text, alone."""

from __future__ import annotations

import pytest

from harness.llm.anthropic import AnthropicProvider
from harness.llm.errors import PermanentModelError, failure_reason
from harness.llm.openai import OpenAIProvider
from harness.llm.provider import ModelProvider
from harness.llm.types import Message
from tests.fakes.model_server import ModelServer, Reply

HELLO = [Message.user("hello")]
KEY = "the model provider refused the API key ({status} {kind}): check {var}"
QUOTA = (
    "the model provider says the account's quota or credit is used up ({status} {kind}): "
    "add credit or raise the limit of the account of {var}"
)
MODEL = "the model provider does not know the model ({status} {kind}): check AGENT_MODEL"


@pytest.mark.parametrize(
    ("name", "reply", "expected"),
    [
        ("anthropic", Reply.error(401), KEY.format(status=401, kind="authentication_error",
                                                  var="ANTHROPIC_API_KEY")),
        ("openai", Reply.error(401), KEY.format(status=401, kind="invalid_api_key",
                                               var="OPENAI_API_KEY")),
        ("anthropic", Reply.error(402, "Your credit balance is too low",
                                  error_type="billing_error"),
         QUOTA.format(status=402, kind="billing_error", var="ANTHROPIC_API_KEY")),
        ("anthropic", Reply.error(400, "Your credit balance is too low to access the API"),
         QUOTA.format(status=400, kind="invalid_request_error", var="ANTHROPIC_API_KEY")),
        ("openai", Reply.error(429, "You exceeded your current quota",
                               error_code="insufficient_quota"),
         QUOTA.format(status=429, kind="insufficient_quota", var="OPENAI_API_KEY")),
        ("anthropic", Reply.error(404), MODEL.format(status=404, kind="not_found_error")),
        ("openai", Reply.error(404), MODEL.format(status=404, kind="model_not_found")),
    ],
    ids=["anthropic-401", "openai-401", "anthropic-402", "anthropic-400-credit",
         "openai-429-quota", "anthropic-404", "openai-404"],
)  # fmt: skip
def test_provider_refusal_leads_with_what_to_fix_and_no_key(
    model_server: ModelServer, name: str, reply: Reply, expected: str
) -> None:
    # Given a provider whose server refuses the call
    provider: ModelProvider = (
        AnthropicProvider(api_key=model_server.api_key, base_url=model_server.url)
        if name == "anthropic"
        else OpenAIProvider(api_key=model_server.api_key, base_url=model_server.openai_url)
    )
    model_server.script(reply)
    # When it calls the model
    with pytest.raises(PermanentModelError) as caught:
        provider.complete(system="s", messages=HELLO)
    provider.close()
    # Then the message starts with what to fix, and `failure_reason` finds exactly that
    message = str(caught.value)
    assert message.startswith(expected + "; "), message
    assert failure_reason(f"StepFailedError: step 'think' failed: PermanentModelError: {message}")
    assert failure_reason(message) == expected
    assert model_server.api_key not in message


def test_provider_refusal_of_a_bad_request_names_no_reason(
    anthropic_provider: AnthropicProvider, model_server: ModelServer
) -> None:
    # Given a refusal no setting fixes (a malformed request)
    model_server.script(Reply.error(400, "messages.0: bad field"))
    # When the call fails
    with pytest.raises(PermanentModelError) as caught:
        anthropic_provider.complete(system="s", messages=HELLO)
    # Then there is no reason to show a person
    assert failure_reason(str(caught.value)) is None


def test_failure_reason_takes_only_the_sentence_out_of_an_error_text() -> None:
    # Given an error text whose other parts quote the conversation
    reason = KEY.format(status=401, kind="authentication_error", var="ANTHROPIC_API_KEY")
    error = f"StepFailedError: private words here; {reason}; anthropic said: secret-ish detail"
    # When its reason is taken out
    found = failure_reason(error)
    # Then only the fixed sentence comes out
    assert found == reason
