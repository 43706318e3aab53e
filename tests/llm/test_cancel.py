"""A set cancel event abandons the call in flight."""

from __future__ import annotations

import threading

import pytest

from harness.errors import NonRetriableError
from harness.llm.errors import ModelCancelledError
from harness.llm.provider import ModelProvider
from harness.llm.types import AssistantTurn, Message
from tests.fakes.model_server import ModelServer, Reply

HELLO = [Message.user("hello")]


def _complete_in_thread(
    provider: ModelProvider, cancel: threading.Event
) -> tuple[threading.Thread, list[AssistantTurn | BaseException]]:
    outcome: list[AssistantTurn | BaseException] = []

    def call() -> None:
        try:
            outcome.append(provider.complete(system="s", messages=HELLO, cancel=cancel))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    return thread, outcome


@pytest.mark.timeout(20)
def test_provider_cancel_aborts_a_slow_streamed_call(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    # Given a model that stalls for a minute after the stream started
    model_server.script(Reply.answer("too late", delay=60))
    cancel = threading.Event()
    thread, outcome = _complete_in_thread(provider, cancel)
    assert model_server.wait_until_stalled(), "the request never reached the stall"

    # When the caller cancels
    cancel.set()
    thread.join(timeout=10)

    # Then the call ended with a cancelled outcome, not with the late text
    assert not thread.is_alive(), "complete() did not return after cancel"
    assert len(outcome) == 1 and isinstance(outcome[0], ModelCancelledError), outcome
    assert outcome[0].partial.stop_reason == "cancelled"
    assert outcome[0].partial.text == ""
    assert isinstance(outcome[0], NonRetriableError)


def test_provider_cancelled_before_the_call_sends_nothing(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    cancel = threading.Event()
    cancel.set()

    with pytest.raises(ModelCancelledError):
        provider.complete(system="s", messages=HELLO, cancel=cancel)

    assert model_server.requests == []


def test_provider_with_an_unset_cancel_event_completes_normally(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    model_server.script(Reply.answer("fine", chunk=2))

    turn = provider.complete(system="s", messages=HELLO, cancel=threading.Event())

    assert turn.text == "fine"
    assert turn.stop_reason == "end"


def test_provider_with_cancel_event_still_raises_model_errors(
    provider: ModelProvider, model_server: ModelServer
) -> None:
    from harness.llm.errors import TransientModelError

    model_server.script(Reply.error(500))

    with pytest.raises(TransientModelError):
        provider.complete(system="s", messages=HELLO, cancel=threading.Event())
