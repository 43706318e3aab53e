"""`harness up`'s slim supervisor (`harness.fleet.up`): what it imports, how the plan reaches it
across the exec, and how it stops the embedded Redis it inherits as a bare pid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from harness.fleet import process_tree, supervision
from harness.fleet.supervision import FleetPlan, RedisChild
from harness.fleet.up import PLAN_FD_ENV, take_over

HEAVY = ("redis", "pydantic", "pydantic_settings", "typer", "rich", "anthropic", "openai",
         "channels", "celery", "opentelemetry", "httpx2", "ssl", "email")  # fmt: skip


def _plan() -> FleetPlan:
    return FleetPlan(
        processes={"web": "exec true"},
        env={"REDIS_URL": "redis://:secret@127.0.0.1:1/0"},
        quiet=True,
        announcements=("embedded Redis on redis://:***@127.0.0.1:1/0",),
        port=8000,
        fleet_id="f00d",
        api_key=False,
        record="/nowhere/record.json",
    )


def test_the_supervisor_loads_none_of_the_heavy_packages() -> None:
    # Given a fresh interpreter
    script = (
        "import json, sys\n"
        "import harness.fleet.up\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
    )
    # When it imports the module `harness up` becomes
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    # Then none of the packages the CLI needs to plan the fleet came with it
    assert json.loads(done.stdout) == [], f"the supervisor imports {done.stdout}"


def test_take_over_reads_the_plan_once_and_leaves_no_trace_for_the_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a plan and the embedded Redis's pid handed over as `hand_over` does
    plan = _plan()
    handed = {"plan": asdict(plan), "redis": {"pid": 4242, "url_file": str(tmp_path / "url")}}
    descriptor = os.open(tmp_path / "plan", os.O_RDWR | os.O_CREAT, 0o600)
    os.write(descriptor, json.dumps(handed).encode())
    os.lseek(descriptor, 0, os.SEEK_SET)
    monkeypatch.setenv(PLAN_FD_ENV, str(descriptor))
    # When the supervisor takes it over
    taken, redis = take_over()
    # Then it has the same plan and Redis
    assert taken == plan
    assert redis is not None and (redis.pid, redis.url_file) == (4242, tmp_path / "url")
    # And neither the variable nor the descriptor is left for a process to inherit
    assert PLAN_FD_ENV not in os.environ
    with pytest.raises(OSError):
        os.fstat(descriptor)


def test_a_redis_child_is_stopped_with_sigterm_and_its_url_file_removed(tmp_path: Path) -> None:
    # Given a child that exits on SIGTERM, noting it, as redis-server does once its data is
    # flushed, and the file its URL was published in
    noted = tmp_path / "noted"
    script = (
        "import pathlib, signal, sys, time\n"
        "def note(*_):\n"
        f"    pathlib.Path({str(noted)!r}).write_text('SIGTERM')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, note)\n"
        "print('ready', flush=True)\n"
        "time.sleep(120)\n"
    )
    url_file = tmp_path / "url"
    url_file.write_text("redis://:secret@127.0.0.1:1/0\n")
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE) as child:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        redis = RedisChild(child.pid, url_file)
        assert redis.running()
        # When it is stopped
        redis.stop()
        gone = process_tree.proc(child.pid) is None
        if not gone:
            child.kill()
    # Then SIGTERM ended it (it is gone, reaped), and the URL file is gone
    assert noted.read_text() == "SIGTERM"
    assert gone and not redis.running()
    assert not url_file.exists()
    redis.stop()  # idempotent


def test_a_redis_child_that_ignores_sigterm_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a child that ignores SIGTERM (a Redis whose shutdown failed)
    ignoring = "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); " \
        "print('ready', flush=True); time.sleep(120)"  # fmt: skip
    monkeypatch.setattr(supervision, "REDIS_STOP_TIMEOUT_S", 0.2)
    with subprocess.Popen([sys.executable, "-c", ignoring], stdout=subprocess.PIPE) as child:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        # When it is stopped
        RedisChild(child.pid, None).stop()
        gone = process_tree.proc(child.pid) is None
        if not gone:
            child.kill()
    # Then it is gone all the same (SIGKILL)
    assert gone, "expected the child to be killed"
