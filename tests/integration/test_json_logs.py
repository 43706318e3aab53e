"""With LOG_FORMAT=json every fleet process writes one JSON object per stderr line, through the
redacting formatter: the web server (uvicorn's own and access lines), the worker, the scheduler,
`harness poll` and the sidecar with its function host child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from harness.fleet.embedded_redis import free_port
from tests.integration.conftest import ROOT
from tests.processes import stop_groups
from tests.waiting import wait_until

SECRET = f"obs{uuid.uuid4().hex}"
START_S = 60.0  # a busy 2-core machine starts Python, Celery and uvicorn slowly

pytestmark = pytest.mark.integration


class Process:
    """One `python -m harness.cli ...` with LOG_FORMAT=json and a registered secret in its
    environment, its stderr in a file."""

    def __init__(self, tmp: Path, redis_url: str, name: str, *args: str, **env: str) -> None:
        self.stderr = tmp / f"{name}.err"
        environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        environ.update(
            REDIS_URL=redis_url,
            HARNESS_KEY_PREFIX=f"lg{uuid.uuid4().hex[:8]}",
            AGENT_WORKSPACE=str(tmp / "workspace"),
            HARNESS_STATE_DIR=str(tmp / "state"),
            LOG_FORMAT="json",
            LOG_LEVEL="INFO",
            OBS_PROBE_TOKEN=SECRET,  # a credential by its name: registered for redaction
            **env,
        )
        with self.stderr.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.cli", *args],
                cwd=ROOT, env=environ, stdout=subprocess.DEVNULL, stderr=err,
                start_new_session=True,
            )  # fmt: skip

    def text(self) -> str:
        return self.stderr.read_text(errors="replace")

    def wait_for(self, fragment: str) -> None:
        wait_until(lambda: fragment in self.text(), f"{fragment!r} in {self.stderr.name}",
                   timeout=START_S)  # fmt: skip

    def stop_and_check(self) -> list[dict[str, str]]:
        """Stop the process; every stderr line must be a JSON object without the secret."""
        stop_groups([self.proc], timeout=20)
        text = self.text()
        lines = [line for line in text.splitlines() if line.strip()]
        assert lines, f"{self.stderr.name} is empty"
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                pytest.fail(f"not a JSON line in {self.stderr.name}: {line!r}\n{text[-3000:]}")
        assert SECRET not in text, f"the secret leaked in {self.stderr.name}"
        return records


@pytest.fixture
def tmp(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "workspace").mkdir()
    yield tmp_path


def test_web_server_lines_and_access_lines_are_json_and_redacted(tmp: Path, redis_url: str) -> None:
    # Given `harness web` with LOG_FORMAT=json
    port = free_port()
    web = Process(tmp, redis_url, "web", "web", "--port", str(port))
    wait_until(lambda: _answers(port), "the web server to answer /livez", timeout=START_S)
    # When a request carries the secret in its query string (an access-log line)
    httpx2.get(f"http://127.0.0.1:{port}/nothing-here?token={SECRET}", timeout=10)
    web.wait_for('"uvicorn.access"')
    # Then every line is JSON, uvicorn's own and the access line included, with no secret
    loggers = {r["logger"] for r in web.stop_and_check()}
    assert {"uvicorn.error", "uvicorn.access"} <= loggers, loggers


def test_scheduler_lines_are_json(tmp: Path, redis_url: str) -> None:
    scheduler = Process(tmp, redis_url, "scheduler", "scheduler")
    scheduler.wait_for("ticking every")
    assert any("scheduler" in r["logger"] for r in scheduler.stop_and_check())


def test_worker_lines_are_json(tmp: Path, redis_url: str) -> None:
    # Given a Celery worker (its banner goes to stdout; its log lines and warnings to stderr)
    worker = Process(tmp, redis_url, "worker", "worker", "--concurrency", "1")
    # When it is ready
    worker.wait_for("ready")
    # Then its lines, Celery's included, are JSON
    assert any(r["logger"].startswith("celery") for r in worker.stop_and_check())


def test_poll_lines_are_json_and_redacted(tmp: Path, redis_url: str) -> None:
    # Given `harness poll telegram --restart` whose platform does not answer
    poll = Process(
        tmp, redis_url, "poll", "poll", "telegram", "--restart",
        TELEGRAM_MODE="polling", TELEGRAM_BOT_TOKEN=f"123456789:{SECRET}",
        TELEGRAM_API_BASE_URL=f"http://127.0.0.1:{free_port()}",
    )  # fmt: skip
    # When it has failed and logged why
    poll.wait_for("polling failed")
    # Then its lines are JSON and do not carry the token
    poll.stop_and_check()


def test_sidecar_and_its_function_host_lines_are_json(tmp: Path, redis_url: str) -> None:
    # Given a function file that logs when the host imports it
    functions = tmp / "workspace" / "functions"
    functions.mkdir()
    (functions / "hello.py").write_text(
        "import logging\nlogging.getLogger('hello').warning('imported by the host')\n"
    )
    # When the sidecar loads it
    sidecar = Process(tmp, redis_url, "sidecar", "sidecar", SIDECAR_SANDBOX="off",
                      SIDECAR_DEBOUNCE="0.2")  # fmt: skip
    sidecar.wait_for("imported by the host")
    # Then the supervisor's and the host's lines are all JSON
    loggers = {r["logger"] for r in sidecar.stop_and_check()}
    assert {"hello", "harness.sidecar"} <= loggers, loggers


def _answers(port: int) -> bool:
    try:
        return httpx2.get(f"http://127.0.0.1:{port}/livez", timeout=2).status_code == 200
    except httpx2.HTTPError:
        return False
