"""`harness up` starts its workers quietly: a real Celery worker started with the fleet's
quiet flag prints no banner (its config, queues and task list), one started without it does,
and both still log that they are ready."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from harness.runtime.banner import QUIET_ENV
from tests.integration.conftest import FLEET_WAIT_S, FUNCTIONS, ROOT, up_env
from tests.processes import stop_groups
from tests.waiting import wait_until

BANNER_MARKS = ("[tasks]", "[queues]", ".> transport:")


def _worker_output(redis_url: str, tmp_path: Path, quiet: bool) -> str:
    log_path = tmp_path / f"worker-{quiet}.log"
    env = up_env() | {
        "REDIS_URL": redis_url,
        "HARNESS_KEY_PREFIX": f"quiet{uuid.uuid4().hex[:8]}",
        "PYTHONPATH": str(ROOT),
        "AGENT_WORKSPACE": str(tmp_path / "workspace"),
        "LOG_LEVEL": "INFO",
    }
    env.pop(QUIET_ENV, None)
    if quiet:
        env[QUIET_ENV] = "1"
    argv = [sys.executable, "-m", "harness.cli", "worker", "--engine", "--functions", FUNCTIONS]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            argv, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            wait_until(
                lambda: " ready" in log_path.read_text() or proc.poll() is not None,
                "the worker to log that it is ready",
                timeout=FLEET_WAIT_S,
            )
        finally:
            stop_groups([proc], timeout=10)
    return log_path.read_text()


@pytest.mark.integration
@pytest.mark.parametrize("quiet", [True, False])
def test_a_quiet_worker_prints_no_celery_banner(
    redis_url: str, tmp_path: Path, quiet: bool
) -> None:
    # Given a real worker started with (or without) the fleet's quiet flag
    # When it has started
    text = _worker_output(redis_url, tmp_path, quiet)
    # Then it said it is ready, and printed Celery's banner only when not quiet
    assert " ready" in text, text  # ours ("worker ready: N functions"), and Celery's
    shown = [mark for mark in BANNER_MARKS if mark in text]
    assert shown == ([] if quiet else list(BANNER_MARKS)), text
