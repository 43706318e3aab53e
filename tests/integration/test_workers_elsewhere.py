"""Workers on other hosts: each started from a working directory of its own, with its own
`.env`, on one Redis. They must share the workspace (the agent's files: memory, skills,
functions), so each `.env` names the same absolute `AGENT_WORKSPACE` (on several hosts, a
shared mount at the same path); both take runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from harness.runtime import Runtime, publish
from harness.runtime.celery_app import CeleryKicker, configure
from harness.runtime.keys import Keys
from tests.integration.conftest import FLEET_WAIT_S, ROOT
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

RUNS = 16


def _start_elsewhere(
    folder: Path, redis_url: str, prefix: str, workspace: Path, *command: str
) -> subprocess.Popen[bytes]:
    """`harness <command>` started from `folder`, configured only by the `.env` written there."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".env").write_text(
        f"REDIS_URL={redis_url}\nHARNESS_KEY_PREFIX={prefix}\nAGENT_WORKSPACE={workspace}\n"
        "HARNESS_FUNCTION_MODULES=tests.integration.functions\nLOG_LEVEL=INFO\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST", "REDIS_", "HARNESS_", "AGENT_"))
    }
    env["PYTHONPATH"] = str(ROOT)  # the code is installed on every host; here, the checkout
    with (folder / f"{command[0]}.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "harness.cli", *command],
            cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


@pytest.fixture
def two_hosts(redis_url: str, tmp_path: Path) -> Iterator[tuple[str, Path, list[Path]]]:
    """Two workers in separate folders sharing one Redis, one key prefix and one workspace,
    and a scheduler (it re-kicks a run whose kick another test's worker dropped)."""
    prefix = f"else{uuid.uuid4().hex[:8]}"
    workspace = tmp_path / "shared-workspace"
    folders = [tmp_path / "host-a", tmp_path / "host-b"]
    worker = ("worker", "--concurrency", "1")
    procs = [_start_elsewhere(f, redis_url, prefix, workspace, *worker) for f in folders]
    procs.append(_start_elsewhere(folders[0], redis_url, prefix, workspace, "scheduler"))
    try:
        yield prefix, workspace, folders
    except BaseException:
        for log in sorted(tmp_path.glob("host-*/*.log")):
            print(f"--- {log}\n{log.read_text(errors='replace')[-3000:]}")
        raise
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=20)


def test_workers_started_from_separate_folders_share_the_runs(
    redis_url: str, two_hosts: tuple[str, Path, list[Path]]
) -> None:
    prefix, workspace, folders = two_hosts
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.delete("it:where")
    configure(redis_url)
    runtime = Runtime(redis=client, kicker=CeleryKicker(), keys=Keys(prefix))
    # Given both workers up (each registered its functions from its own .env)
    wait_until(
        lambda: sum(
            json.loads(info).get("role") == "worker"
            for info in client.hvals(Keys(prefix).presence_info)
        ) >= 2
        and client.hexists(Keys(prefix).functions, "it-where"),
        what="two workers to join the fleet", timeout=2 * FLEET_WAIT_S,
    )  # fmt: skip
    # When runs are published
    for n in range(RUNS):
        publish({"name": "it/where", "data": {"n": n}}, runtime=runtime)
    # Then all of them run, on both workers, and each worker resolved the shared workspace
    places = wait_until(
        lambda: (found := client.lrange("it:where", 0, -1)) and len(found) >= RUNS and found,
        what=f"{RUNS} runs to complete", timeout=2 * FLEET_WAIT_S,
    )  # fmt: skip
    cwds = {place.split("|")[0] for place in places}
    workspaces = {place.split("|")[1] for place in places}
    assert cwds == {str(f) for f in folders}, f"runs went to {cwds}, expected both folders"
    assert workspaces == {str(workspace.resolve())}, workspaces
