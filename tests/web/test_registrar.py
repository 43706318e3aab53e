"""The web process registers the built-in functions, so early events are not dropped."""

from __future__ import annotations

from collections.abc import Iterator

import fakeredis
import pytest

from harness.chat_client import TERMINAL_SENDER, chat_message
from harness.errors import ConfigurationError
from harness.fleet.restarts import Backoff
from harness.fleet_functions import BUILTIN_FUNCTION_MODULES
from harness.runtime import Runtime, publish
from harness.runtime.kicker import DeferredKicker, RecordingKicker
from harness.web.registrar import FunctionRegistrar
from tests.runtime_fixtures import KickerBuilds


@pytest.fixture
def global_runtime() -> Iterator[Runtime]:
    """A runtime on fakeredis with the process-wide function registry, as the web uses."""
    client = fakeredis.FakeRedis(decode_responses=True)
    yield Runtime(redis=client, kicker=RecordingKicker())
    client.flushall()


def test_an_event_published_before_any_worker_is_routed_once_the_web_registered(
    global_runtime: Runtime,
) -> None:
    # Given a web process whose Redis is not reachable at first
    attempts: list[int] = []

    def factory() -> Runtime:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConfigurationError("no Redis found")
        return global_runtime

    registrar = FunctionRegistrar(factory, BUILTIN_FUNCTION_MODULES, Backoff(0.001, 0.002))
    # When it starts
    registrar.start()
    # Then it keeps trying and registers the built-in functions once Redis answers
    assert registrar.registered.wait(timeout=30), "expected the functions to be registered"
    assert len(attempts) == 3
    # And a chat message published now, with no worker up, starts a run that waits for one
    message = chat_message("hi", "s1", channel="cli", sender=TERMINAL_SENDER)
    result = publish(message, runtime=global_runtime)
    assert len(result.run_ids) >= 1, "expected the message to match the agent's function"


def test_the_web_builds_its_deferred_kicker_off_the_event_loop_as_it_registers() -> None:
    # Given a web process whose runtime's kicker is built on first use (building the Celery
    # one imports Celery: a first webhook would pay for it on the event loop)
    builds = KickerBuilds()
    deferred = DeferredKicker(builds)
    runtime = Runtime(redis=fakeredis.FakeRedis(decode_responses=True), kicker=deferred)
    registrar = FunctionRegistrar(lambda: runtime, (), Backoff(0.001, 0.002))
    # When its registrar has registered the functions, before any webhook
    registrar.start()
    assert registrar.registered.wait(timeout=30), "expected the functions to be registered"
    # Then the kicker was built by the registrar's thread, once
    assert builds.calls == 1 and deferred.built, f"built {builds.calls} kickers"
