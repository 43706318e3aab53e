"""The deferred kicker: a runtime that only reads never builds its Celery kicker; the first
kick, template or backlog builds it once, and every later one goes through that one."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from harness.runtime import celery_app
from harness.runtime.assembly import build_runtime
from harness.runtime.celery_app import CeleryKicker
from harness.runtime.kicker import DeferredKicker, Kick
from harness.settings import Settings
from tests.runtime_fixtures import KickerBuilds


def test_deferred_kicker_builds_nothing_until_used() -> None:
    # Given a deferred kicker
    builds = KickerBuilds()
    deferred = DeferredKicker(builds)
    # When nothing is kicked, and it is closed
    asyncio.run(deferred.aclose())
    # Then its kicker was never built
    assert builds.calls == 0 and not deferred.built


def test_deferred_kicker_builds_once_and_passes_every_kick_through() -> None:
    # Given a deferred kicker used from eight threads at once
    builds = KickerBuilds()
    deferred = DeferredKicker(builds)
    threads = [
        threading.Thread(target=deferred.kick, args=(Kick(f"r{i}", "q", i + 1),)) for i in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # When it is also asked for a backlog, a template and an async kick
    asyncio.run(deferred.kick_async(Kick("r-async", "q", 9, front=True)))
    backlog = deferred.backlog("q")
    template = deferred.script_template()
    # Then one kicker was built, and it got every kick and answered for itself
    assert builds.calls == 1, f"built {builds.calls} kickers"
    assert deferred.built
    assert builds.kicker.pending[0].run_id == "r-async"
    assert sorted(k.run_id for k in builds.kicker.pending) == sorted(
        ["r-async", *(f"r{i}" for i in range(8))]
    )
    assert (backlog, template) == (9, "")


def test_built_runtime_points_celery_at_its_redis_on_its_first_kick(tmp_path: Path) -> None:
    # Given a runtime built on a Redis URL, after Celery was pointed elsewhere
    celery_app.configure("redis://127.0.0.1:2/0")
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_url="redis://127.0.0.1:1/5",
        agent_workspace=tmp_path,
    )
    runtime = build_runtime(settings)
    assert isinstance(runtime.kicker, DeferredKicker) and not runtime.kicker.built
    assert celery_app.app.conf.broker_url == "redis://127.0.0.1:2/0"
    # When the runtime first needs its kick message (as publishing does)
    template = runtime.kicker.script_template()
    # Then the Celery kicker is built, pushes kicks from the scripts, and Celery's broker is
    # the runtime's Redis
    assert isinstance(runtime.kicker.resolve(), CeleryKicker)
    assert "@RUN@" not in template and '"RUN"' in template
    assert celery_app.app.conf.broker_url == "redis://127.0.0.1:1/5"
