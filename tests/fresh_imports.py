"""Which modules a fresh interpreter has imported after running some code: how the start-up
tests check what a command or a worker loads (by `sys.modules`, never by time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def loaded_after(code: str, watched: tuple[str, ...], folder: Path) -> list[str]:
    """Those of `watched` (top-level module names) that are in `sys.modules` once `code` has
    run in a fresh interpreter with this project first on the path, in `folder`, with an
    empty workspace there. Raises `CalledProcessError` when `code` fails."""
    report = f"print(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))"
    probe = f"{code}\nimport json, sys\n{report}\n"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT), "AGENT_WORKSPACE": str(folder / "ws")},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found: list[str] = json.loads(done.stdout.splitlines()[-1])
    return found
