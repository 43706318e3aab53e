"""`harness up` as a new user sees it: one line per process, the embedded Redis's line, then
`ready:`; with `--verbose`, everything the processes print while they start (Celery's
banner and lines, uvicorn's). One fleet start per test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.fleet.embedded_redis import free_port
from harness.runtime.banner import QUIET_ENV
from tests.integration.conftest import ROOT, up_env, wait_until
from tests.processes import interrupt

pytestmark = [pytest.mark.integration, pytest.mark.timeout(360)]

PROCESSES = ("web", "worker", "scheduler", "gateway", "sidecar")
_LINE = re.compile(r"^\d\d:\d\d:\d\d (\S+)\s*\| (.*)$")  # honcho's `12:00:00 name | text`


def _up_output(tmp_path: Path, *flags: str, until: tuple[str, ...]) -> str:
    """What `harness up FLAGS` prints (stdout and stderr) in a fresh folder with a copied
    `.env.example`, from its start until every one of `until` has been printed."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / ".env.example", project / ".env")
    env = up_env() | {"PORT": str(free_port())}
    env.pop(QUIET_ENV, None)
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "up", *flags],
            cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        wait_until(
            lambda: (
                all(mark in log.read_text(errors="replace") for mark in until)
                or process.poll() is not None
            ),
            timeout=180,
            what=f"`harness up` to print {until}",
        )
    finally:
        interrupt(process, timeout=40)
    return log.read_text(errors="replace")


def _before_ready(output: str) -> list[str]:
    lines = output.splitlines()
    ready = next((i for i, line in enumerate(lines) if "| ready: " in line), None)
    assert ready is not None, f"expected a `ready:` line:\n{output}"
    return lines[:ready]


def test_harness_up_says_one_line_per_process_before_ready(tmp_path: Path) -> None:
    # Given a fresh project
    # When `harness up` starts, without --verbose, until the fleet is ready
    output = _up_output(tmp_path, until=("| ready: ",))
    # Then every line before `ready:` is a process's (no bare log record of the supervisor)
    start = _before_ready(output)
    parsed = [_LINE.match(line) for line in start]
    assert all(parsed), f"expected only prefixed lines before ready:\n{output}"
    by_name: dict[str, list[str]] = {}
    for match in parsed:
        assert match is not None
        by_name.setdefault(match[1], []).append(match[2])
    # And each process said at most one line (the worker one more, for the sidecar it runs
    # on a thread), the fleet only its Redis (and root) lines
    worker = by_name.pop("worker", [])
    own = [line for line in worker if "sidecar ready: " not in line]
    assert len(own) <= 1 and len(worker) - len(own) <= 1, f"expected a worker line:\n{output}"
    for name in PROCESSES:
        assert len(by_name.pop(name, [])) <= 1, f"expected at most one {name} line:\n{output}"
    system = by_name.pop("system", [])
    assert by_name == {}, f"expected no other process:\n{output}"
    assert [line for line in system if line.startswith("embedded Redis on ")], output
    root = [line for line in system if line.startswith("running as root")]
    assert len(root) == (1 if os.geteuid() == 0 else 0), output
    assert len(system) == 1 + len(root), f"expected Redis and root lines only:\n{output}"
    # And no Celery warning about root, anywhere
    assert "SecurityWarning" not in output and "superuser" not in output, output


def test_harness_up_verbose_prints_the_whole_start_up(tmp_path: Path) -> None:
    # Given a fresh project
    # When `harness up --verbose` starts until its worker said it is ready
    output = _up_output(tmp_path, "--verbose", until=("| ready: ", "celery.apps.worker"))
    # Then Celery's and uvicorn's start-up lines are there, each worker's banner too
    assert "[tasks]" in output and "Connected to redis" in output, output
    assert "Uvicorn running on" in output, output
    if os.geteuid() == 0:  # and Celery's own warning, as Celery prints it
        assert "superuser privileges" in output, output
