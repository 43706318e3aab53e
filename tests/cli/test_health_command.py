"""Liveness files and `harness health --process NAME`: the exec probe of the processes with no
HTTP port. Fresh file: exit 0; missing, stale or never touched because the loop stalled: 1."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from typer.testing import CliRunner

from harness.cli import app
from harness.fleet.liveness import LivenessFile, Pulse, health_file, liveness_for
from harness.runtime import Runtime
from harness.runtime.scheduler import run_scheduler
from harness.settings import get_settings


def _probe(process: str) -> int:
    return CliRunner().invoke(app, ["health", "--process", process]).exit_code


def test_health_is_0_while_the_process_keeps_its_file_fresh_and_1_once_it_stops(
    health_dir: Path,
) -> None:
    # Given a worker keeping its liveness file
    keeper = liveness_for(get_settings(), "worker")
    keeper.start()
    # When the probe runs, it passes
    assert keeper.path == health_dir / "worker.alive"
    assert _probe("worker") == 0
    # And once the worker stops, it fails
    keeper.stop()
    assert _probe("worker") == 1


def test_health_is_1_when_the_file_is_older_than_the_max_age(health_dir: Path) -> None:
    # Given a scheduler file last touched a minute ago (HEALTH_MAX_AGE=30)
    path = health_file(get_settings(), "scheduler")
    path.parent.mkdir(parents=True)
    path.touch()
    old = time.time() - 60
    os.utime(path, (old, old))
    # When the probe runs, it fails
    assert _probe("scheduler") == 1


def test_health_is_1_for_a_process_that_never_started(health_dir: Path) -> None:
    assert _probe("sidecar") == 1


def test_health_refuses_an_unknown_process(health_dir: Path) -> None:
    assert _probe("web") == 2, "the web server's probe is GET /livez"


def test_a_stalled_loop_does_not_touch_its_file(tmp_path: Path) -> None:
    # Given a loop whose last pass is older than the max age
    path = tmp_path / "scheduler.alive"
    pulse = Pulse()
    # When its liveness file starts, with a check that the pulse is fresh within 0 s
    keeper = LivenessFile(path, interval=3600, check=lambda: pulse.fresh(-1.0))
    keeper.start()
    # Then the file is not touched
    assert not path.exists()
    keeper.stop()


def test_the_scheduler_beats_its_pulse_after_every_pass_even_a_failed_one(
    unreachable_runtime: Runtime,
) -> None:
    # Given a scheduler whose Redis does not answer
    stop = threading.Event()
    passes: list[int] = []

    def on_pass() -> None:
        passes.append(1)
        if len(passes) == 2:
            stop.set()

    # When it runs until its second pass
    run_scheduler(unreachable_runtime, 0.0, stop, on_pass)
    # Then each failed pass still counted as a sign of life
    assert len(passes) == 2
