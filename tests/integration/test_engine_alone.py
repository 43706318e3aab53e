"""docs/engine.md, run as written: a user's function on the engine alone, with real Redis,
a `harness worker --engine` and a `harness scheduler`, and no agent loaded."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import uuid
from pathlib import Path
from typing import IO

import redis

from harness.runtime.keys import Keys
from tests.integration.conftest import ROOT, up_env
from tests.processes import stop_groups
from tests.waiting import wait_until

DOC = ROOT / "docs" / "engine.md"
WAIT_S = 60.0


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S)


def _argv(line: str) -> list[str]:
    """A documented command line as argv: `harness` is this interpreter's `harness.cli`, and
    environment assignments and a trailing `&` are left to the caller."""
    words = [w for w in shlex.split(line) if w != "&" and not re.match(r"^[A-Z_]+=", w)]
    assert words[0] == "harness", line
    return [sys.executable, "-m", "harness.cli", *words[1:]]


def _start(line: str, cwd: Path, env: dict[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        _argv(line), cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip


def test_engine_alone_runs_the_documented_function_once_with_no_agent_function(
    redis_url: str, tmp_path: Path
) -> None:
    # Given the module and the commands docs/engine.md shows
    module = next(b for b in _blocks("python") if b.startswith("# shop_tasks.py"))
    (tmp_path / "shop_tasks.py").write_text(module)
    lines = [ln.strip() for ln in _blocks("bash")[0].splitlines() if "harness " in ln]
    prefix = f"eng{uuid.uuid4().hex[:8]}"
    env = up_env() | {
        "REDIS_URL": redis_url,
        "HARNESS_KEY_PREFIX": prefix,
        "PYTHONPATH": f"{tmp_path}:{ROOT}",
        "HARNESS_REAPER_INTERVAL": "0.2",
        "AGENT_WORKSPACE": str(tmp_path / "workspace"),
    }
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    keys = Keys(prefix)
    background = [ln for ln in lines if ln.endswith("&")]
    foreground = [ln for ln in lines if not ln.endswith("&")]
    assert len(background) == 2 and "--engine" in background[0], lines
    procs = []
    try:
        for i, line in enumerate(background):
            with (tmp_path / f"proc{i}.log").open("wb") as log:
                procs.append(_start(line, tmp_path, env, log))
        wait_until(
            lambda: (
                client.hexists(keys.functions, "thank-buyer")
                and len(client.hgetall(keys.scheduler_heartbeat())) > 0
            ),
            timeout=WAIT_S,
            what="the engine worker to register and the scheduler to start",
        )

        # When the documented event is published, as documented
        publish = subprocess.run(
            _argv(foreground[0]), cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=WAIT_S,
        )  # fmt: skip
        assert publish.returncode == 0, publish.stderr

        # Then the function ran to its end, past its durable sleep, and published once
        def thanked() -> list[dict[str, object]]:
            found = []
            for _id, fields in client.xrange(keys.events):
                event = json.loads(fields["event"])
                if event.get("name") == "shop/buyer.thanked":
                    found.append(event)
            return found

        logs = lambda: "\n".join(p.read_text() for p in tmp_path.glob("proc*.log"))  # noqa: E731
        wait_until(lambda: thanked(), timeout=WAIT_S, what=f"the thank-you event\n{logs()}")
        [event] = thanked()
        assert event["data"] == {"order": "o-1", "total": 7}
        # And the worker registered the user's function and none of the agent's or channels'
        assert client.hkeys(keys.functions) == ["thank-buyer"]
        runs = subprocess.run(
            _argv(foreground[1]), cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=WAIT_S,
        )  # fmt: skip
        assert runs.returncode == 0 and "thank-buyer" in runs.stdout, runs.stdout + runs.stderr
    finally:
        stop_groups(procs, timeout=10)
