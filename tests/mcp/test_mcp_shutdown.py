"""MCP servers end with the worker: a stdio server's process is gone (and reaped) after
Celery's `worker_shutdown`. The demo server lingers after its stdin closes, so only a real
shutdown (the SDK terminating it) ends it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from celery.signals import worker_shutdown

from harness.agent.deps import agent_deps, build_deps, set_agent_deps
from tests.agent.conftest import make_settings
from tests.fakes.model_server import ModelServer
from tests.mcp.test_mcp_tools import DEMO


def _write_config(path: Path, pidfiles: dict[str, Path]) -> None:
    """One lingering demo server per name, each writing its pid to its file."""
    servers = {
        name: {
            "command": sys.executable,
            "args": [DEMO],
            "env": {"DEMO_PIDFILE": str(pidfile), "DEMO_LINGER": "1"},
        }
        for name, pidfile in pidfiles.items()
    }
    path.write_text(json.dumps({"mcpServers": servers}))


def _alive(pid: int) -> bool:
    """True while `pid` exists, a zombie included (a child nobody reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_worker_shutdown_ends_the_stdio_servers(tmp_path: Path, model_server: ModelServer) -> None:
    # Given the process's agent deps with two stdio MCP servers that have started
    pidfiles = {"one": tmp_path / "one.pid", "two": tmp_path / "two.pid"}
    settings = make_settings(tmp_path / "workspace", model_server)
    _write_config(settings.mcp_config, pidfiles)
    set_agent_deps(build_deps(settings))
    try:
        names = [s.name for s in agent_deps().tools.specs()]
        assert {"one__echo", "two__echo"} <= set(names), names
        pids = [int(pidfile.read_text()) for pidfile in pidfiles.values()]
        assert all(_alive(pid) for pid in pids)

        # When Celery announces the worker's shutdown
        worker_shutdown.send(sender=None)

        # Then both servers' processes are gone and reaped (not zombies of this process)
        alive = [pid for pid in pids if _alive(pid)]
        assert alive == [], f"MCP servers {alive} outlived the worker's shutdown"
    finally:
        set_agent_deps(None)
