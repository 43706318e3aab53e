"""One HTTP stack per process: the SDKs use httpx2, so our own code does too (issue 30)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.fleet_functions import BUILTIN_FUNCTION_MODULES
from harness.sidecar.executor import WORKER_MODULES

# what a worker, the web process and the sidecar load: the command line, the composition root,
# the built-in functions, Celery's worker modules, both model SDKs' seams, MCP and the channels
FLEET_MODULES = (
    "harness.cli",
    "harness.composition",
    *BUILTIN_FUNCTION_MODULES,
    *WORKER_MODULES,
    "harness.llm.anthropic",
    "harness.llm.openai",
    "harness.mcp.connection",
    "harness.tools.builtin",
    "harness.web.app",
    "channels.telegram.plugin",
    "channels.slack.plugin",
)
PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_a_fleet_process_loads_httpx2_and_not_httpx() -> None:
    # Given a fresh interpreter (this one has test helpers loaded)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}

    # When it imports every module a fleet process loads
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *FLEET_MODULES],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    loaded = set(json.loads(done.stdout))

    # Then exactly one HTTP client stack is in sys.modules: the one the SDKs use
    assert "httpx2" in loaded, "the SDKs' HTTP stack, httpx2, was expected to load"
    assert "httpx" not in loaded, "a second HTTP stack (httpx) was loaded beside httpx2"
    assert "httpcore" not in loaded, "httpx's transport (httpcore) was loaded beside httpx2's"
