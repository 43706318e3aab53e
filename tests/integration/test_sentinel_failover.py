"""The fleet on Sentinel survives its Redis master being SIGKILLed mid-load.

The web, a worker and a scheduler run as subprocesses given only `REDIS_SENTINELS`; the fake
Telegram API and the scripted model server run here. Messages (one chat each) are posted
as Telegram would: a 503 or a refused connection is retried. After a third of them, the
master is killed; the Sentinels promote the replica, and every message accepted after the
kill must be answered. Messages accepted before the kill whose writes had not reached the
replica yet can be lost (asynchronous replication): the test reports how many.

It takes about 50 s, so it runs with the chaos suite (`-m chaos`, a stage of `.ci/run`), not in
the default one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest

from harness.fleet.embedded_redis import free_port
from tests.channels.payloads import tg_private_text
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi
from tests.integration.sentinel_cluster import MASTER_NAME, SentinelCluster
from tests.processes import stop_groups
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

ROOT = Path(__file__).resolve().parents[2]
SECRET = "failover-secret"
MESSAGES = 60
KILL_AFTER = 20
FIRST_CHAT = 70_000_000
START_WAIT_S = 60.0


def _environment(
    cluster: SentinelCluster, telegram: FakeTelegramApi, model: ModelServer, tmp: Path
) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST", "SLACK_", "TELEGRAM_", "REDIS_"))
    }
    env.update(
        REDIS_SENTINELS=cluster.sentinels_setting,
        REDIS_SENTINEL_MASTER=MASTER_NAME,
        HARNESS_KEY_PREFIX="failover",
        HARNESS_LEASE_TTL="2",
        HARNESS_REAPER_INTERVAL="0.2",
        HARNESS_RETRY_BACKOFF="0.1",
        HARNESS_FORBID_REAL_MODELS="1",
        LOG_LEVEL="INFO",
        DM_POLICY="open",
        AGENT_WORKSPACE=str(tmp / "workspace"),
        ANTHROPIC_API_KEY=model.api_key,
        ANTHROPIC_BASE_URL=model.url,
        LLM_PROVIDER="anthropic",
        TELEGRAM_BOT_TOKEN=telegram.token,
        TELEGRAM_WEBHOOK_SECRET=SECRET,
        TELEGRAM_API_BASE_URL=telegram.base_url,
        TELEGRAM_MODE="webhook",
    )
    return env


class _Processes:
    """Fleet subprocesses, each in a session of its own, killed on `stop()`."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env, self.log_dir = env, log_dir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, *args: str) -> None:
        with (self.log_dir / f"{name}.log").open("wb") as log:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "harness.cli", *args],
                cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
            for p in sorted(self.log_dir.glob("*.log"))
        )

    def stop(self) -> None:
        stop_groups(self.procs.values(), timeout=15)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SentinelCluster]:
    started = SentinelCluster(tmp_path / "cluster").start()
    try:
        yield started
    finally:
        started.stop()


def _post_until_accepted(client: httpx2.Client, url: str, n: int, refused: list[int]) -> float:
    """Post message `n` (chat FIRST_CHAT + n) until the web answers 200, as Telegram retries;
    return the time (monotonic) of the 200. Each 503 or failed request appends `n` to
    `refused`."""
    update = tg_private_text(update_id=500_000 + n, text=f"message {n}")
    update["message"]["chat"]["id"] = update["message"]["from"]["id"] = FIRST_CHAT + n
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        try:
            response = client.post(url, json=update, headers=headers)
        except httpx2.HTTPError:
            refused.append(n)
            time.sleep(0.1)
            continue
        if response.status_code == 200:
            return time.monotonic()
        assert response.status_code == 503, f"message {n}: {response.status_code} {response.text}"
        refused.append(n)
        time.sleep(0.1)
    raise AssertionError(f"message {n} was not accepted within {START_WAIT_S}s")


@pytest.mark.timeout(300)
def test_fleet_keeps_answering_after_the_master_is_killed(
    cluster: SentinelCluster, tmp_path: Path
) -> None:
    # Given the web, a worker and a scheduler that know only the Sentinels
    port = free_port()
    with FakeTelegramApi() as telegram, ModelServer() as model:
        model.script(*[Reply.answer("pong") for _ in range(MESSAGES * 4)])
        fleet = _Processes(_environment(cluster, telegram, model, tmp_path), tmp_path)
        try:
            fleet.start("web", "web", "--port", str(port))
            fleet.start("worker", "worker", "--concurrency", "4")
            fleet.start("scheduler", "scheduler")
            base = f"http://127.0.0.1:{port}"
            wait_until(
                lambda: _ready(f"{base}/readyz"), what="the web to see a worker",
                timeout=START_WAIT_S,
            )  # fmt: skip
            accepted_at: dict[int, float] = {}
            lock = threading.Lock()
            killed = threading.Event()
            kill_time: list[float] = []
            refused: list[int] = []

            def send(n: int) -> None:
                with httpx2.Client(timeout=10) as client:
                    at = _post_until_accepted(client, f"{base}/webhooks/telegram", n, refused)
                with lock:
                    accepted_at[n] = at
                    if len(accepted_at) == KILL_AFTER and not killed.is_set():
                        # When the master is SIGKILLed mid-load
                        cluster.kill("master")
                        kill_time.append(time.monotonic())
                        killed.set()

            with ThreadPoolExecutor(4) as pool:
                list(pool.map(send, range(MESSAGES)))
            # Then the Sentinels promote the replica
            replica = cluster.ports["replica"]
            wait_until(
                lambda: cluster.master_port() == replica, what="the replica to be promoted",
                timeout=START_WAIT_S,
            )  # fmt: skip
            after = [n for n, at in accepted_at.items() if at > kill_time[0]]
            before = [n for n, at in accepted_at.items() if at <= kill_time[0]]

            def answered() -> set[int]:
                return {m["chat"]["id"] - FIRST_CHAT for m in telegram.messages}

            # And every message accepted after the kill is answered
            try:
                wait_until(
                    lambda: set(after) <= answered(),
                    what="every message accepted after the kill to be answered",
                    timeout=START_WAIT_S,
                )
            except BaseException:
                print(fleet.logs())
                raise
            # (those accepted before it get the lease time and a reaper pass to come back)
            deadline = time.monotonic() + 15
            while not set(before) <= answered() and time.monotonic() < deadline:
                time.sleep(0.1)
            lost = sorted(set(before) - answered())
            counts = [m["chat"]["id"] for m in telegram.messages]
            doubled = sorted({c - FIRST_CHAT for c in counts if counts.count(c) > 1})
            print(
                f"failover: {len(before)} accepted before the kill, {len(after)} after "
                f"({len(refused)} answers 503 or refused meanwhile); "
                f"lost (accepted before, never answered): {len(lost)} {lost}; "
                f"answered twice: {len(doubled)} {doubled}"
            )
            assert len(after) >= MESSAGES - KILL_AFTER - 4, (
                f"only {len(after)} messages were accepted after the kill"
            )
        finally:
            fleet.stop()


def _ready(url: str) -> bool:
    try:
        return httpx2.get(url, timeout=2).status_code == 200
    except httpx2.HTTPError:
        return False
