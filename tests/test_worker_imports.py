"""What a worker holds in memory from the start: its function modules and the agent's
dependencies import no PDF reader (pypdf, ~10 MB a worker) until a PDF arrives. Checked in a
fresh interpreter by `sys.modules`; the memory itself is measured by bench/worker_memory.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import importlib, json, sys
from harness.fleet_functions import BUILTIN_FUNCTION_MODULES
for module in BUILTIN_FUNCTION_MODULES:
    importlib.import_module(module)
import harness.agent.deps, harness.runtime.worker, harness.search.extract
print(json.dumps(sorted(m for m in ("pypdf",) if m in sys.modules)))
"""


def test_a_workers_modules_import_no_pdf_reader(tmp_path: Path) -> None:
    # Given a fresh interpreter
    # When it imports what a worker imports before its first turn
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "AGENT_WORKSPACE": str(tmp_path / "ws")},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    # Then pypdf is not among them: only reading a PDF loads it
    assert json.loads(done.stdout.splitlines()[-1]) == [], done.stdout
