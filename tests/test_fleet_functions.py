"""The fleet's built-in functions named without importing them agree with what their modules
declare when they are loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.fleet_functions import BUILTIN_FUNCTION_IDS

ROOT = Path(__file__).resolve().parent.parent
DECLARED = """
import json
from harness.sidecar.builtins import fleet_builtin_ids
print(json.dumps(sorted(fleet_builtin_ids())))
"""


def test_builtin_function_ids_are_the_ids_the_builtin_modules_declare(tmp_path: Path) -> None:
    # Given a fresh interpreter (no built-in module imported yet)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENT_WORKSPACE": str(tmp_path / "ws")}
    # When it loads the built-in function modules and reads the ids they declare
    done = subprocess.run(
        [sys.executable, "-c", DECLARED],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    declared = json.loads(done.stdout.splitlines()[-1])
    # Then they are the ids `harness functions` names without loading them
    assert declared == sorted(BUILTIN_FUNCTION_IDS), (
        "harness/fleet_functions.py BUILTIN_FUNCTION_IDS is out of date: the modules declare "
        f"{declared}"
    )
