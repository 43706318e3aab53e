"""A real sidecar (and scheduler) in subprocesses on a real Redis, with a workspace of its own.

Functions written by the tests return what they observed, so the test reads each run's result
from the ledger: no side channel is needed between the test and the child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis

from harness.runtime import Runtime, publish
from harness.runtime.celery_app import CeleryKicker, configure
from harness.runtime.keys import Keys
from harness.runtime.ledger import RunRecord
from tests.integration.conftest import ROOT
from tests.processes import stop_groups
from tests.waiting import wait_until

T = TypeVar("T")
DEBOUNCE = "0.3"
RELOAD_TIMEOUT = 30.0  # a reload starts processes; a busy 2-core machine needs the margin


def wait_for(check: Callable[[], T], what: str, timeout: float = RELOAD_TIMEOUT) -> T:
    """`wait_until` with the margin a reload needs."""
    return wait_until(check, what, timeout=timeout)


@dataclass
class SidecarFleet:
    """`harness sidecar` and `harness scheduler` on one Redis, key prefix and workspace."""

    redis_url: str
    workspace: Path
    prefix: str = field(default_factory=lambda: f"sc{uuid.uuid4().hex[:8]}")
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def functions(self) -> Path:
        return self.workspace / "functions"

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        env.update(
            REDIS_URL=self.redis_url,
            HARNESS_KEY_PREFIX=self.prefix,
            AGENT_WORKSPACE=str(self.workspace),
            HARNESS_LEASE_TTL="2",
            HARNESS_REAPER_INTERVAL="0.2",
            HARNESS_RETRY_BACKOFF="0.1",
            SIDECAR_DEBOUNCE=DEBOUNCE,
            SIDECAR_SANDBOX="off",  # these tests find children by pid; see test_sidecar_sandbox
            LOG_LEVEL="INFO",
        )
        env.update(self.extra_env)
        return env

    def start(self, name: str, *args: str) -> None:
        with (self.workspace.parent / f"{name}.log").open("wb") as log:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "harness.cli", *args],
                cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text()[-4000:]}" for p in self.workspace.parent.glob("*.log")
        )

    def stop(self) -> None:
        stop_groups(self.procs.values(), timeout=20)

    def runtime(self) -> Runtime:
        configure(self.redis_url)
        client = redis.Redis.from_url(self.redis_url, decode_responses=True)
        return Runtime(redis=client, kicker=CeleryKicker(), keys=Keys(self.prefix), lease_ttl=2.0)

    def write(self, name: str, source: str) -> Path:
        path = self.functions / name
        path.write_text(textwrap.dedent(source))
        return path

    def registered(self) -> set[str]:
        return {spec.id for spec in self.runtime().triggers.specs()}

    def wait_registered(self, function_id: str, present: bool = True, timeout: float = 60) -> None:
        wait_for(
            lambda: (function_id in self.registered()) == present,
            timeout=timeout,
            what=f"{function_id} to be {'registered' if present else 'unregistered'}\n"
            + self.logs(),
        )

    def result_of(self, name: str, data: dict[str, Any], timeout: float = 60) -> Any:
        """Publish an event and wait for its first run to complete; its result."""
        rt = self.runtime()
        result = publish({"name": name, "data": data}, runtime=rt)
        assert result.run_ids, f"event {name} started no run; registered: {self.registered()}"
        run_id = result.run_ids[0]

        def done() -> RunRecord | None:
            record = rt.ledger.run(run_id)
            return record if record and record.status in ("completed", "failed") else None

        record = wait_for(done, timeout=timeout, what=f"run {run_id}\n{self.logs()}")
        assert record.status == "completed", f"run failed: {record.error}"
        return record.result

    def eventually(
        self, name: str, data: dict[str, Any], expected: Any, timeout: float = 60
    ) -> None:
        """Publish the event again until a run returns `expected` (after a reload)."""
        seen: list[Any] = []

        def check() -> bool:
            seen.append(self.result_of(name, data))
            return bool(seen[-1] == expected)

        wait_for(check, timeout=timeout, what=f"result {expected!r}, got {seen[-3:]}")

    def run_ids_for(self, name: str, data: dict[str, Any]) -> tuple[str, ...]:
        return publish({"name": name, "data": data}, runtime=self.runtime()).run_ids


@pytest.fixture(scope="module")
def sidecar_fleet(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SidecarFleet]:
    """A started sidecar and scheduler on an empty workspace, shared by a test module (tests
    use function ids and files of their own); the sidecar is alive."""
    workspace = tmp_path_factory.mktemp("sidecar") / "workspace"
    (workspace / "functions").mkdir(parents=True)
    fleet = SidecarFleet(redis_url=redis_url, workspace=workspace)
    fleet.start("sidecar", "sidecar")
    fleet.start("scheduler", "scheduler")
    try:
        fleet.wait_registered("sidecar-heartbeat")
        yield fleet
    finally:
        fleet.stop()
