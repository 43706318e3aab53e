"""The sidecar compiles the agent's files from source on every load, never from a stale cache."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

MODULE = """
from harness.runtime import event, function


@function(id="versioned", trigger=event("test/versioned"))
def versioned(ctx):
    return "{version}"
"""

LOAD_TWICE = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from harness.sidecar.loader import load_folder

    folder = Path(sys.argv[1])
    path = folder / "versioned.py"

    def load():
        loaded = load_folder(folder)
        (fn,) = loaded.functions
        return fn.handler(None)

    first = load()
    stat = path.stat()
    path.write_text(path.read_text().replace("v1", "v2"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same second
    print(first, load())
    """
)


def test_an_edit_of_the_same_size_in_the_same_second_runs_the_new_code(tmp_path: Path) -> None:
    # Given a function file loaded once, with `v1` in it
    folder = tmp_path / "functions"
    folder.mkdir()
    (folder / "versioned.py").write_text(MODULE.format(version="v1"))
    # When it is edited to `v2` (same size, same modification time) and loaded again
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run(
        [sys.executable, "-c", LOAD_TWICE, str(folder)],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    # Then the second load runs the new code, and no bytecode was left in the workspace
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["v1", "v2"], out.stdout
    assert not (folder / "__pycache__").exists()
