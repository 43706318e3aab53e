"""How a Python module starts inside the sidecar's Landlock sandbox:
`python -I -u sandbox_start.py START -- MODULE ARGS...`.

Landlock grants the `harness` and `channels` packages but not the folder that holds them (the
project folder, with its `.env`), so the import system, which lists a `sys.path` entry before
looking inside it, cannot find them there. This script (standard library only, run as a file)
maps each package to its folder with a finder of its own, sets the environment START names
(`TMPDIR` in the workspace: Landlock grants no `/tmp`), and runs MODULE as `__main__` with
ARGS as its arguments. START is a JSON object: `{"packages": {name: folder}, "env": {...}}`.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import runpy
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType


class PackageFinder:
    """A meta path finder that knows where each of a few top-level packages lives."""

    def __init__(self, packages: Mapping[str, str]) -> None:
        self.packages = dict(packages)

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """The spec of `name` when it is one of the packages, else None (others look)."""
        folder = self.packages.get(name)
        if folder is None:
            return None
        init = os.path.join(folder, "__init__.py")
        return importlib.util.spec_from_file_location(
            name, init, submodule_search_locations=[folder]
        )


def main(args: list[str]) -> None:
    """Entry point: `START -- MODULE ARGS...`."""
    if len(args) < 3 or args[1] != "--":
        sys.exit("usage: sandbox_start.py START -- MODULE ARGS...")
    start = json.loads(args[0])
    sys.meta_path.insert(0, PackageFinder(start["packages"]))
    os.environ.update(start["env"])
    sys.argv = [args[2], *args[3:]]  # run_module puts the module's file in sys.argv[0]
    runpy.run_module(args[2], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
