"""The web and worker processes freeze what start-up built before they serve, so the garbage
collector's full passes do not walk it (a whole burst of webhooks waited ~300 ms on them)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest

from harness.runtime import Runtime
from harness.runtime import worker as worker_module
from harness.runtime.celery_app import app as celery_app
from harness.runtime.testing import RecordingKicker
from harness.settings import get_settings
from harness.web import app as web_app
from harness.web.listening import ListeningServer
from tests.runtime.test_worker_start import initialising_worker


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Start and end with nothing frozen, so other tests' collections are unchanged."""
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.fixture
def fake_runtime() -> Runtime:
    return Runtime(redis=fakeredis.FakeRedis(decode_responses=True), kicker=RecordingKicker())


def test_the_web_server_freezes_the_startup_heap_before_it_serves(
    unfrozen: None, fake_runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given uvicorn's blocking run replaced by one that notes what the collector would walk
    frozen_when_served: list[int] = []

    def run(server: ListeningServer, sockets: Any = None) -> None:
        frozen_when_served.append(gc.get_freeze_count())
        server.started = True

    monkeypatch.setattr(ListeningServer, "run", run)
    # When the web server starts
    web_app.serve(get_settings(), runtime_factory=lambda: fake_runtime)
    # Then by the time it serves, what start-up built (thousands of objects) is frozen
    assert frozen_when_served and frozen_when_served[0] > 10_000, frozen_when_served


def test_each_of_several_web_processes_freezes_its_app(unfrozen: None) -> None:
    # When a web worker process (`harness web --workers N`) builds its app
    built = web_app.production_app()
    # Then the app and everything start-up built is frozen
    assert built.routes and gc.get_freeze_count() > 10_000


def test_the_worker_freezes_the_startup_heap_before_it_consumes(
    unfrozen: None, fake_runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given Celery's blocking worker entry point replaced by one that initialises a worker
    # (Celery's `worker_init`), then notes the frozen count
    frozen_when_consuming: list[int] = []
    monkeypatch.setattr(worker_module, "get_runtime", lambda: fake_runtime)

    def consuming() -> None:
        frozen_when_consuming.append(gc.get_freeze_count())

    monkeypatch.setattr(celery_app, "Worker", initialising_worker({}, then=consuming))
    # When a worker starts
    worker_module.run_worker(get_settings(), [], concurrency=1, queues=["harness"])
    # Then it froze its start-up heap before taking any task
    assert frozen_when_consuming and frozen_when_consuming[0] > 10_000, frozen_when_consuming
