"""How a Celery worker of this process starts (`WorkerStart`, on Celery's `worker_init`): the
one start of `harness worker` and `celery -A harness.celery worker`."""

from __future__ import annotations

import gc
import inspect
import logging
from collections.abc import Callable, Iterator
from typing import Any

import fakeredis
import pytest
from celery.signals import worker_init

from harness.errors import ConfigurationError
from harness.runtime import Runtime
from harness.runtime import worker as worker_module
from harness.runtime.celery_app import app as celery_app
from harness.runtime.kicker import DeferredKicker, RecordingKicker
from harness.runtime.presence import live_members
from harness.settings import get_settings
from tests.runtime_fixtures import KickerBuilds


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    """A fake-Redis runtime the worker start uses; nothing armed before or after, and nothing
    left frozen (a started worker freezes its heap) for other tests' collections."""
    built = Runtime(redis=fakeredis.FakeRedis(decode_responses=True), kicker=RecordingKicker())
    monkeypatch.setattr(worker_module, "get_runtime", lambda: built)
    worker_module.start_workers_with(None)
    yield built
    worker_module.start_workers_with(None)
    gc.unfreeze()


class StartingWorker:
    """What `worker_init` hands its receivers (Celery's `WorkController`), as far as they read
    it: the options its bootsteps will be built with, and the app."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options, self.app = options, celery_app


def initialising_worker(
    options: dict[str, Any], then: Callable[[], object] = lambda: None
) -> Callable[..., Any]:
    """Celery's worker class (`app.Worker`), replaced by one whose blocking `start()` only
    initialises a worker (Celery's `worker_init`, with `options`), then calls `then`."""

    class Worker:
        def __init__(self, **_: object) -> None:
            pass

        def start(self) -> None:
            worker_init.send(sender=StartingWorker(options))
            then()

    return Worker


def test_worker_start_names_the_module_that_cannot_be_loaded(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a worker asked to load a module that does not exist
    monkeypatch.setattr(celery_app, "Worker", initialising_worker({}))
    # When it starts
    with pytest.raises(ConfigurationError) as raised:
        worker_module.run_worker(get_settings(), ["no_such_module_xyz"], 1, ["harness"])
    # Then the command line gets our error, naming the module
    assert "no_such_module_xyz" in str(raised.value)


def test_worker_start_turns_gossip_and_mingle_off_and_joins_the_presence_set(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given Celery's options for a worker started with neither --without-gossip nor -mingle
    options: dict[str, Any] = {"without_gossip": False, "without_mingle": False}
    members: list[tuple[str, tuple[str, ...]]] = []

    def consuming() -> None:
        members.extend((m.role, m.queues) for m in live_members(runtime))

    monkeypatch.setattr(celery_app, "Worker", initialising_worker(options, then=consuming))
    # When a worker of this process initialises
    worker_module.run_worker(get_settings(), [], 1, ["harness", "slow"])
    # Then Celery runs it without gossip and mingle, and it beat with its queues until it ended
    assert options == {"without_gossip": True, "without_mingle": True}
    assert members == [("worker", ("harness", "slow"))]
    assert live_members(runtime) == []


def test_a_worker_told_no_queues_consumes_the_runs_and_the_replies_delivery(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a worker started without queues (`celery -A harness.celery worker` without -Q):
    # its queues are then the ones Celery's app consumes by default
    members: list[tuple[str, ...]] = []

    def consuming() -> None:
        members.extend(m.queues for m in live_members(runtime))

    monkeypatch.setattr(celery_app, "Worker", initialising_worker({}, then=consuming))
    # When it initialises
    worker_module.run_worker(get_settings(), [], 1, [])
    # Then it consumes the runs' queue and the one replies are posted from (and any queue a
    # kick named in this process, which Celery adds to its app's queues as it sends one)
    [queues] = members
    assert queues[:2] == ("harness", "harness-delivery"), queues
    # And so does `harness worker` when told none
    assert harness_worker_default_queues() == "harness,harness-delivery"


def harness_worker_default_queues() -> str:
    """The default of `harness worker --queues`, as its command line declares it."""
    from harness.cli import worker

    default = inspect.signature(worker).parameters["queues"].default
    return str(default)


def test_replies_are_posted_from_the_delivery_queue_and_turns_run_on_the_runs_queue() -> None:
    # Given the fleet's functions as a worker registers them
    from channels.delivery import send_reply
    from harness.agent.handlers import handle_message

    # Then the reply's delivery runs on its own queue, which `harness up` leaves to its
    # gateway's process, and the turn on the runs' queue
    assert send_reply.spec.queue == "harness-delivery"
    assert handle_message.spec.queue == "harness"


def test_a_worker_this_process_was_not_told_to_start_is_left_alone(runtime: Runtime) -> None:
    # Given nothing armed (the sidecar's executor runs its own Celery worker)
    options: dict[str, Any] = {"without_gossip": False}
    # When a worker initialises
    worker_init.send(sender=StartingWorker(options))
    # Then its options and the presence set are untouched
    assert options == {"without_gossip": False} and live_members(runtime) == []


def test_worker_start_builds_a_deferred_kicker_before_it_consumes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a runtime whose kicker is built on first use (building it points Celery at the
    # runtime's broker, see harness.runtime.assembly)
    builds = KickerBuilds()
    deferred = DeferredKicker(builds)
    built = Runtime(redis=fakeredis.FakeRedis(decode_responses=True), kicker=deferred)
    monkeypatch.setattr(worker_module, "get_runtime", lambda: built)
    monkeypatch.setattr(celery_app, "Worker", initialising_worker({}))
    try:
        # When a worker of this process initialises, before its consumer connects
        worker_module.run_worker(get_settings(), [], 1, ["harness"])
    finally:
        worker_module.start_workers_with(None)
        gc.unfreeze()
    # Then the kicker was built then, once, though nothing was kicked yet
    assert builds.calls == 1, f"built {builds.calls} kickers"


@pytest.fixture
def kick_loggers() -> Iterator[list[logging.Logger]]:
    loggers = [logging.getLogger(name) for name in worker_module.KICK_LINE_LOGGERS]
    before = [logger.level for logger in loggers]
    yield loggers
    for logger, level in zip(loggers, before, strict=True):
        logger.setLevel(level)


def test_worker_start_keeps_celerys_per_kick_lines_out_of_an_info_log(
    kick_loggers: list[logging.Logger],
) -> None:
    # Given the root logger at INFO, as LOG_LEVEL=INFO sets it
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.INFO)
    try:
        # When a worker is about to consume at LOG_LEVEL=INFO
        worker_module.quiet_kick_lines("INFO")
        # Then Celery's "received" / "succeeded" lines are not written; its failures are
        shown = [lg.name for lg in kick_loggers if lg.isEnabledFor(logging.INFO)]
        assert shown == [], f"per-kick lines still written by {shown}"
        assert all(lg.isEnabledFor(logging.WARNING) for lg in kick_loggers)
        # And at LOG_LEVEL=DEBUG they are written again
        worker_module.quiet_kick_lines("debug")
        root.setLevel(logging.DEBUG)
        assert all(lg.isEnabledFor(logging.INFO) for lg in kick_loggers)
    finally:
        root.setLevel(level)
