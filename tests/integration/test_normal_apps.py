"""The fleet as a normal Celery app and a normal ASGI app: `celery -A harness.celery worker`
runs functions and answers `inspect ping`, and `uvicorn --factory
harness.web.app:production_app` does all of `harness web`'s start-up work (docs/deploy.md)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest
import redis

from harness.agent.handlers import HANDLE_MESSAGE
from harness.fleet.embedded_redis import free_port
from harness.runtime import Runtime, publish
from harness.runtime.celery_app import CeleryKicker, configure
from harness.runtime.keys import Keys
from tests.integration.conftest import FLEET_WAIT_S, FUNCTIONS, ROOT, up_env
from tests.processes import stop_groups
from tests.waiting import wait_until


def _env(redis_url: str, tmp_path: Path, prefix: str, **extra: str) -> dict[str, str]:
    return up_env() | {
        "REDIS_URL": redis_url,
        "HARNESS_KEY_PREFIX": prefix,
        "HARNESS_FUNCTION_MODULES": FUNCTIONS,
        "AGENT_WORKSPACE": str(tmp_path / "workspace"),
        "HARNESS_STATE_DIR": str(tmp_path / "state"),
        "LOG_LEVEL": "INFO",
        "PYTHONPATH": str(ROOT),
        **extra,
    }


@contextmanager
def _running(
    argv: list[str], env: dict[str, str], log: Path, ready: Callable[[], bool], what: str
) -> Iterator[None]:
    """`python -m <argv>` in its own process group, once `ready()`; stopped on exit."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", *argv], cwd=ROOT, env=env, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        wait_until(lambda: ready() or proc.poll() is not None, what=what, timeout=FLEET_WAIT_S)
        assert proc.poll() is None, f"{argv[0]} exited:\n{log.read_text()[-3000:]}"
        yield
    finally:
        stop_groups([proc], timeout=10)


@pytest.fixture
def celery_worker(redis_url: str, tmp_path: Path) -> Iterator[tuple[str, dict[str, str], Path]]:
    """`celery -A harness.celery worker` as docs/deploy.md starts it, with LOG_FORMAT=json:
    its key prefix, environment and log, once it has registered the functions."""
    prefix = f"cel{uuid.uuid4().hex[:8]}"
    env = _env(redis_url, tmp_path, prefix, LOG_FORMAT="json")
    log = tmp_path / "worker.log"
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    with _running(
        ["celery", "-A", "harness.celery", "worker"], env, log,
        lambda: bool(client.hexists(Keys(prefix).functions, "it-serial")),
        "the Celery worker to register its functions",
    ):  # fmt: skip
        yield prefix, env, log


def test_celery_worker_runs_a_published_events_function_to_completion(
    redis_url: str, celery_worker: tuple[str, dict[str, str], Path]
) -> None:
    # Given `celery -A harness.celery worker` up, with the functions of HARNESS_FUNCTION_MODULES
    prefix, _env, log = celery_worker
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    configure(redis_url)
    runtime = Runtime(redis=client, kicker=CeleryKicker(in_script=True), keys=Keys(prefix))
    key = uuid.uuid4().hex
    # When an event for one of them is published
    result = publish({"name": "it/serial", "data": {"key": key, "n": 1}}, runtime=runtime)
    # Then its run completes, its step having run in the worker
    [run_id] = result.run_ids
    wait_until(
        lambda: (record := runtime.ledger.run(run_id)) and record.status == "completed",
        what="the run to complete in the Celery worker", timeout=FLEET_WAIT_S,
    )  # fmt: skip
    assert client.lrange(f"it:order:{key}", 0, -1) == ["1"]
    # And the worker is in the presence set, consuming the runs' and the replies' queues
    infos = [json.loads(i) for i in client.hvals(Keys(prefix).presence_info)]
    assert {"role": "worker", "queues": ["harness", "harness-delivery"]} in infos, infos
    # And it logged its start as JSON (LOG_FORMAT), Celery's own lines too
    lines = [json.loads(ln) for ln in log.read_text().splitlines() if ln.startswith("{")]
    loggers = {line["logger"] for line in lines}
    assert {"harness.runtime.worker", "celery.apps.worker"} <= loggers, log.read_text()[-3000:]


def test_celery_inspect_ping_answers_from_the_worker(
    celery_worker: tuple[str, dict[str, str], Path],
) -> None:
    # Given `celery -A harness.celery worker` up
    _prefix, env, _log = celery_worker
    # When Celery's own command line pings the workers
    ping = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "harness.celery", "inspect", "ping", "-t", "5"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=FLEET_WAIT_S,
    )  # fmt: skip
    # Then the worker answers
    assert ping.returncode == 0 and "pong" in ping.stdout, ping.stdout + ping.stderr


@pytest.fixture
def uvicorn_app(redis_url: str, tmp_path: Path) -> Iterator[tuple[str, int, Path]]:
    """`uvicorn --factory harness.web.app:production_app` as docs/deploy.md starts it, with
    LOG_FORMAT=json and a short WEB_HEADER_TIMEOUT: its prefix, port and log."""
    prefix = f"web{uuid.uuid4().hex[:8]}"
    port = free_port()
    env = _env(redis_url, tmp_path, prefix, LOG_FORMAT="json", WEB_HEADER_TIMEOUT="0.5")
    log = tmp_path / "web.log"
    argv = ["uvicorn", "--factory", "harness.web.app:production_app", "--port", str(port),
            "--http", "harness.web.header_timeout:HeaderTimeoutProtocol"]  # fmt: skip
    with _running(argv, env, log, lambda: _answers(port), "uvicorn to serve the app"):
        yield prefix, port, log


def _answers(port: int) -> bool:
    try:
        return httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code in (200, 503)
    except httpx2.HTTPError:
        return False


def test_uvicorn_factory_registers_the_built_in_triggers(
    redis_url: str, uvicorn_app: tuple[str, int, Path]
) -> None:
    # Given the app served by plain uvicorn, and no worker anywhere
    prefix, _port, _log = uvicorn_app
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    # Then the web process registered the built-in functions' triggers, so a message
    # published before any worker starts is routed to the agent
    wait_until(
        lambda: client.hexists(Keys(prefix).functions, HANDLE_MESSAGE),
        what=f"the web process to register {HANDLE_MESSAGE}", timeout=FLEET_WAIT_S,
    )  # fmt: skip


def test_uvicorn_factory_logs_json_with_log_format_json(
    uvicorn_app: tuple[str, int, Path],
) -> None:
    # Given the app served by plain uvicorn with LOG_FORMAT=json
    _prefix, _port, log = uvicorn_app
    # Then the app's start-up lines are JSON objects
    line = wait_until(
        lambda: next((ln for ln in log.read_text().splitlines() if "web registered" in ln), ""),
        what="the registration's log line", timeout=FLEET_WAIT_S,
    )  # fmt: skip
    record = json.loads(line)
    assert record["logger"] == "harness.web.registrar" and record["level"] == "INFO", record
    # And so are uvicorn's own
    started = next(ln for ln in log.read_text().splitlines() if "startup complete" in ln)
    assert json.loads(started)["logger"] == "uvicorn.error", started


def test_uvicorn_with_the_documented_protocol_times_out_slow_headers(
    uvicorn_app: tuple[str, int, Path],
) -> None:
    # Given the app served by plain uvicorn with the documented --http and a 0.5 s deadline
    _prefix, port, _log = uvicorn_app
    # When a client connects and sends half a request line, then nothing
    with socket.create_connection(("127.0.0.1", port), timeout=FLEET_WAIT_S) as sock:
        sock.sendall(b"GET /healthz HT")
        answer = sock.recv(4096)
    # Then the server answers 408 and closes
    assert answer.startswith(b"HTTP/1.1 408"), answer
