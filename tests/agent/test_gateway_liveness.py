"""A worker whose model gateway died is not alive: with `MODEL_CALLS=gateway` the worker's
liveness file (`harness health --process worker`, its Kubernetes probe) is kept only while the
gateway's thread runs, so a worker that would leave every offloaded call waiting is restarted."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.agent.gateway import ModelGateway
from harness.cli import app
from harness.composition import MODEL_GATEWAY, start_model_gateway
from harness.fleet.liveness import LivenessFile, health_file, lift
from harness.runtime import Runtime, set_runtime
from harness.settings import Settings, get_settings
from tests.agent.conftest import make_settings
from tests.fakes.model_server import ModelServer
from tests.waiting import wait_until


@pytest.fixture
def gateway_settings(runtime: Runtime, model_server: ModelServer, tmp_path: Path) -> Settings:
    """Settings with offloaded model calls, the test's runtime the process's."""
    set_runtime(runtime)
    return make_settings(tmp_path / "workspace", model_server, model_calls="gateway")


@pytest.fixture
def worker_gateway(gateway_settings: Settings) -> Iterator[ModelGateway]:
    """The model gateway a worker starts with MODEL_CALLS=gateway (as the fleet starts it)."""
    gateway = start_model_gateway(gateway_settings)
    assert gateway is not None, "MODEL_CALLS=gateway started no gateway"
    yield gateway
    gateway.stop()
    lift(MODEL_GATEWAY)
    set_runtime(None)


def _probe() -> int:
    return CliRunner().invoke(app, ["health", "--process", "worker"]).exit_code


def test_a_worker_with_a_running_gateway_is_alive(
    health_dir: Path, worker_gateway: ModelGateway
) -> None:
    # Given a worker whose gateway runs
    keeper = LivenessFile(health_file(get_settings(), "worker"), interval=3600)
    # When its liveness file is kept
    keeper.start()
    # Then the worker's probe passes
    assert _probe() == 0, "a worker with a running gateway was reported dead"
    keeper.stop()


@pytest.mark.parametrize("how", ["killed", "stopped"])
def test_a_worker_whose_gateway_thread_died_fails_its_liveness_probe(
    health_dir: Path,
    worker_gateway: ModelGateway,
    how: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a worker keeping its liveness file, alive by the probe, touching it often
    caplog.set_level(logging.WARNING, logger="harness.fleet.liveness")
    path = health_file(get_settings(), "worker")
    keeper = LivenessFile(path, interval=0.01)
    keeper.start()
    assert _probe() == 0
    # When its model gateway's thread dies (a crash, or a stop), and time passes the max age
    if how == "killed":
        worker_gateway.kill()
    else:
        worker_gateway.stop()
    wait_until(lambda: "the model gateway not alive" in caplog.text, "a touch refused")
    old = time.time() - 60  # the gateway stays dead: no later touch freshens it again
    os.utime(path, (old, old))
    # Then the file is no longer touched, and the worker's probe fails
    try:
        assert _probe() == 1, f"a worker whose gateway was {how} is reported alive"
    finally:
        keeper.stop()


def test_inline_model_calls_start_no_gateway_and_require_none(
    health_dir: Path, runtime: Runtime, model_server: ModelServer, tmp_path: Path
) -> None:
    # Given a worker with inline model calls
    settings = make_settings(tmp_path / "workspace", model_server, model_calls="inline")
    # When it would start its gateway
    started = start_model_gateway(settings)
    # Then none starts, and its liveness file is kept as before
    assert started is None
    keeper = LivenessFile(health_file(get_settings(), "worker"), interval=3600)
    keeper.start()
    assert _probe() == 0
    keeper.stop()


def test_a_worker_shutting_down_stops_its_gateway_without_calling_itself_dead(
    health_dir: Path, worker_gateway: ModelGateway, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a worker keeping its liveness file, touching it often
    from celery.signals import worker_shutdown

    from harness.fleet.liveness import not_alive

    caplog.set_level(logging.WARNING, logger="harness.fleet.liveness")
    keeper = LivenessFile(health_file(get_settings(), "worker"), interval=0.01)
    keeper.start()
    try:
        # When the worker shuts down (Celery's signal), which stops its gateway on purpose
        worker_shutdown.send(sender=None)
        wait_until(lambda: not worker_gateway.alive(), "the gateway to stop")
        # Then nothing required is missing, and no "not alive" warning is logged
        assert not_alive() == []
        keeper.stop()
        assert "not alive" not in caplog.text, caplog.text
    finally:
        keeper.stop()


def test_a_gateway_process_with_inline_model_calls_says_why_in_one_line(
    health_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given MODEL_CALLS=inline (the workers make the model calls)
    monkeypatch.setenv("MODEL_CALLS", "inline")
    get_settings.cache_clear()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        # When `harness gateway` is started
        result = CliRunner().invoke(app, ["gateway"])
    finally:
        get_settings.cache_clear()
        # a command sets the root logger up on the runner's stream, closed once it returns
        root.handlers[:], root.level = handlers, level
    # Then it says in one line why it does not run, and exits
    assert result.exit_code != 0, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "MODEL_CALLS=inline" in lines[0], result.output
    assert "Traceback" not in result.output


def test_the_gateway_process_has_a_liveness_probe(health_dir: Path) -> None:
    # Given a gateway process keeping its liveness file
    keeper = LivenessFile(health_file(get_settings(), "gateway"), interval=3600)
    # When it is kept, Then `harness health --process gateway` passes; before, it fails
    assert CliRunner().invoke(app, ["health", "--process", "gateway"]).exit_code == 1
    keeper.start()
    try:
        assert CliRunner().invoke(app, ["health", "--process", "gateway"]).exit_code == 0
    finally:
        keeper.stop()
