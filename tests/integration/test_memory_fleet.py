"""`harness memory distill` through a real fleet: the CLI publishes, a Celery worker runs
`agent-heartbeat` against the scripted model server, the CLI prints the outcome."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.model_server import ModelServer, Reply
from tests.integration.conftest import ROOT, Fleet, wait_until

pytestmark = pytest.mark.integration

MEMORY = "# Memory\n\n- Ana's sister is Ada.\n"
LOG = "# 2027-01-15\n\n### 10:00:00\nAna moved to Porto.\n"


@pytest.fixture
def memory_fleet(redis_url: str, tmp_path: Path, model_server: ModelServer) -> Iterator[Fleet]:
    fleet = Fleet(redis_url=redis_url, prefix=f"mem{uuid.uuid4().hex[:8]}", log_dir=tmp_path)
    fleet.extra_env.update(
        ANTHROPIC_API_KEY=model_server.api_key, ANTHROPIC_BASE_URL=model_server.url
    )
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text(MEMORY)
    (workspace / "memory" / "2027-01-15.md").write_text(LOG)
    fleet.start_worker("worker0")
    yield fleet
    fleet.stop()


def test_memory_distill_force_runs_on_a_worker_and_prints_the_outcome(
    memory_fleet: Fleet, model_server: ModelServer
) -> None:
    # Given a worker that has registered agent-heartbeat, and a model that adds the note
    model_server.script(Reply.answer(MEMORY + "- Ana lives in Porto.\n"))
    workspace = memory_fleet.log_dir / "workspace"

    def distill() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "harness.cli", "memory", "distill", "--force"],
            cwd=ROOT, env=memory_fleet.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    # When the person runs `harness memory distill --force` (once the worker is up)
    done = wait_until(
        lambda: (result := distill()).returncode == 0 and result,
        timeout=60,
        what=f"a worker to run the distillation\n{memory_fleet.logs()}",
    )
    # Then the outcome is printed, MEMORY.md holds the answer, and the old text is version 1
    assert isinstance(done, subprocess.CompletedProcess)
    assert "written" in done.stdout, done.stdout + done.stderr
    assert (workspace / "MEMORY.md").read_text() == MEMORY + "- Ana lives in Porto.\n"
    assert (workspace / "memory" / "history" / "0001.md").read_text() == MEMORY
