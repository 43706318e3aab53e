"""`harness up` end to end, as a new user runs it: `.env` copied from `.env.example`
unchanged, a model key, and channels that cannot connect."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from harness.fleet import fleets
from harness.fleet.embedded_redis import free_port
from tests.fakes.model_server import ModelServer, Reply
from tests.integration.conftest import ROOT, up_env, wait_until
from tests.processes import interrupt

# Each test starts a whole fleet of processes: allow for a slow, busy machine.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(360)]


def _get(url: str) -> httpx2.Response | None:
    try:
        return httpx2.get(url, timeout=2)
    except httpx2.HTTPError:
        return None


@dataclass
class Up:
    """A running `harness up` in `project`, its output in `log`, web on `port`."""

    process: subprocess.Popen[bytes]
    project: Path
    log: Path
    port: int

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def status(self, path: str) -> int:
        response = _get(f"http://127.0.0.1:{self.port}{path}")
        return response.status_code if response is not None else 0


@pytest.fixture
def up(tmp_path: Path, model_server: ModelServer) -> Iterator[Up]:
    """`harness up` in a fresh folder: `.env` is `.env.example` unchanged; the environment adds
    a model key for the scripted model server, a Telegram bot in polling mode and a Slack app
    in Socket Mode, both pointed at a closed port."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / ".env.example", project / ".env")
    closed, port = free_port(), free_port()
    env = up_env() | {
        "ANTHROPIC_API_KEY": model_server.api_key,
        "ANTHROPIC_BASE_URL": model_server.url,
        "PORT": str(port),
        "WORKER_CONCURRENCY": "2",
        "TELEGRAM_BOT_TOKEN": "123:not-a-token",
        "TELEGRAM_MODE": "polling",
        "TELEGRAM_API_BASE_URL": f"http://127.0.0.1:{closed}",
        "SLACK_BOT_TOKEN": "xoxb-not-a-token",
        "SLACK_APP_TOKEN": "xapp-not-a-token",
        "SLACK_API_BASE_URL": f"http://127.0.0.1:{closed}/api/",
    }
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "up"],
            cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    running = Up(process, project, log, port)
    try:
        yield running
    finally:
        interrupt(process, timeout=40)


def _cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=cwd, env=up_env(), capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_harness_up_from_a_copied_env_example_answers_a_message_sent_from_another_folder(
    up: Up, model_server: ModelServer, tmp_path: Path
) -> None:
    # Given `harness up` started from a copied .env.example
    wait_until(lambda: up.status("/healthz") == 200, timeout=60, what=f"/healthz\n{up.output()}")
    wait_until(lambda: up.status("/readyz") == 200, timeout=60, what=f"/readyz\n{up.output()}")
    wait_until(
        lambda: "ready: chat with `harness chat`" in up.output(), what=f"ready\n{up.output()}"
    )
    assert f"POST /api/chat on port {up.port}" in up.output()
    assert "GET /readyz" not in up.output(), "expected probes to stay out of the access log"
    # When a message is sent with the CLI from a folder with no .env
    model_server.script(Reply.answer("hello from the scripted model"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    sent = _cli("send", "--wait", "--timeout", "90", "hi", cwd=elsewhere)
    # Then it finds the fleet and prints the agent's answer
    assert sent.returncode == 0, f"{sent.stdout}\n{sent.stderr}\n{up.output()}"
    assert "hello from the scripted model" in sent.stdout
    # And the embedded Redis password is printed nowhere
    password = (up.project / ".harness" / "redis" / "password").read_text().strip()
    assert password and password not in up.output()
    # And the runtime's data is beside the workspace, not in it
    assert not (up.project / "workspace" / ".harness").exists()
    # And the sidecar's first load had the workspace's shipped example (`harness up` completed
    # the workspace first, so the first message caused no reload)
    wait_until(lambda: "sidecar ready" in up.output(), what=f"sidecar\n{up.output()}")
    loaded = re.search(r"sidecar ready: watching .*?, (\d+) function\(s\)", up.output())
    assert loaded is not None and loaded[1] == "1", up.output()
    assert up.output().count("validated functions/") <= 1, up.output()
    # And the scheduler runs on a thread of the worker
    # And so does the sidecar's supervisor: no process of their own, both alive for a probe
    assert "scheduler every 1s" in up.output() and "sidecar |" not in up.output()
    for part in ("scheduler", "sidecar"):
        probe = _cli("health", "--process", part, cwd=up.project)
        assert probe.returncode == 0, f"{part}: {probe.stdout}\n{probe.stderr}\n{up.output()}"


def test_listeners_that_cannot_connect_keep_retrying_while_the_fleet_serves(up: Up) -> None:
    # Given listeners whose platform is a closed port
    # When they have failed a few times
    wait_until(
        lambda: up.output().count("slack listener stopped") >= 2,
        timeout=60,
        what=f"the Slack listener to restart twice\n{up.output()}",
    )
    wait_until(
        lambda: up.output().count("telegram polling failed") >= 2,
        timeout=60,
        what=f"Telegram polling to retry twice\n{up.output()}",
    )
    # Then the fleet is still up and serving
    assert up.process.poll() is None, up.output()
    assert up.status("/healthz") == 200, up.output()
    wait_until(lambda: up.status("/readyz") == 200, timeout=60, what=f"/readyz\n{up.output()}")


def test_the_fleet_record_lets_the_cli_find_redis_and_is_removed_on_exit(
    up: Up, tmp_path: Path
) -> None:
    # Given a running fleet
    wait_until(lambda: up.status("/healthz") == 200, timeout=60, what=f"/healthz\n{up.output()}")
    workspace = up.project / "workspace"
    wait_until(lambda: fleets.find(workspace), what="the fleet record")
    # When `harness runs` runs from another folder, naming the workspace
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    listed = _cli("--workspace", str(workspace), "runs", cwd=elsewhere)
    # Then it reaches the fleet's Redis
    assert listed.returncode == 0, f"{listed.stdout}\n{listed.stderr}"
    # And once `harness up` stops, the record is gone and the CLI says where it looked
    up.process.send_signal(signal.SIGINT)
    up.process.wait(timeout=40)
    assert fleets.find(workspace) is None
    lost = _cli("runs", cwd=elsewhere)
    assert lost.returncode != 0
    assert "no Redis found" in lost.stderr + lost.stdout, lost.stderr
